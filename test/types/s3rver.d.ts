// Types of the parts of s3rver (an S3-protocol server over a directory) the tests use; the package ships none.
declare module "s3rver" {
  import type { AddressInfo } from "node:net";
  import type { Server } from "node:http";
  export interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory: string;
    resetOnClose?: boolean;
    configureBuckets?: Array<{ name: string }>;
  }
  export default class S3rver {
    constructor(options: S3rverOptions);
    httpServer: Server;
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
  }
}
