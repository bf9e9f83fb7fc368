// The bucket proxy lives beside `npm run chaos`, which uses it too (scripts must not import tests).
export { startBucketProxy, type BucketProxy } from "../../scripts/lib/bucket-proxy.ts";
