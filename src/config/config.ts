// One typed configuration, from flags and environment variables (flags win), printed at start
// without secrets.
import { parseArgs } from "node:util";
import path from "node:path";
import { DEFAULT_TIERS, parseTiers, type TierTable } from "./tiers.ts";

export type Surface = "self-hosted" | "cloud" | "serverless";

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** PostgreSQL connection string of the shared store; null = the SQLite file under dataDir. */
  databaseUrl: string | null;
  /** Whether this process runs jobs (`serve --no-dispatch`: false, an API node; PostgreSQL only). */
  dispatch: boolean;
  /** PostgreSQL: how long a worker's claim on a running job holds without a heartbeat. */
  leaseMs: number;
  /** Blob directory (several nodes may share it); null = `<dataDir>/blobs`. */
  blobDir: string | null;
  /** `s3://bucket/prefix`: blobs in an S3-compatible bucket instead of a directory; null = the filesystem. */
  blobStore: string | null;
  /** Endpoint of the S3-compatible service of blobStore (MinIO, R2, Ceph RGW, GCS); null = AWS, as the SDK is configured. */
  s3Endpoint: string | null;
  /** Downloads of blobs in a bucket stream through this server instead of a redirect to a presigned URL. */
  blobProxy: boolean;
  /** `flowgate worker --health`: the worker answers GET /healthz and /readyz on host:port (serve always does). */
  health: boolean;
  /** Redis carrying live previews between processes (PostgreSQL deployments); null = small previews as notifications. */
  redisUrl: string | null;
  /** Static bearer token of the self-hosted surface; null = open. */
  token: string | null;
  /** Origin (and optional path) put in front of signed links; null = the request's origin. */
  publicUrl: string | null;
  queueLimit: number;
  concurrency: number;
  retentionMs: number;
  /** HMAC key of signed links; null = generated once per data dir. */
  signingKey: string | null;
  surface: Surface;
  /** Serverless: deployments are also reached as `{id}.run.{domain}` and `{id}.stg.run.{domain}`. */
  serverlessDomain: string | null;
  /** Cloud and serverless: credits charged per second of execution. */
  creditRate: number;
  /** Cloud: concurrent jobs per subscription tier. */
  tiers: TierTable;
  engine: "embedded" | "comfyui";
  /** Base URLs of the ComfyUI instances of the comfyui engine (empty for embedded). */
  comfyuiUrls: string[];
  /** Their output folders on this machine, one for all or one per URL (empty: outputs come over /view). */
  comfyuiOutputDirs: string[];
  /** Vendor endpoint of the partner node (FlowgatePartnerCall); null disables it. */
  partnerUrl: string | null;
  /** Memory for the embedded engine's cached node results, in bytes; 0 turns the cache off. */
  cacheBytes: number;
  /** Tensor memory one job of the embedded engine may hold at once, in bytes. */
  jobMemoryBytes: number;
  /** Largest JSON body, in bytes. */
  bodyLimit: number;
  /** Largest file of an upload (v2 and hosted), in bytes. */
  maxUploadBytes: number;
  /** Lifetime of signed links, in ms. */
  urlTtlMs: number;
  /** Open event streams per caller (per client address for anonymous callers). */
  maxStreamsPerCaller: number;
  /** Previews a second at most on each v2 event stream (latest wins). */
  streamPreviewRate: number;
  /** Job labels (`metadata`) are taken; false declines them with 422 metadata_not_supported (`--labels off`). */
  labels: boolean;
  /** Interval of the SSE keep-alive comment, in ms. */
  sseKeepAliveMs: number;
  /** Interval of WebSocket pings; a socket that misses one is closed, in ms. */
  wsPingIntervalMs: number;
  /** Bound of a captured log, in bytes. */
  logLimitBytes: number;
  reaperIntervalMs: number;
  /** Longest wait of a running job's output for unavailable blob storage before the job fails, in ms. */
  blobWaitMs: number;
  /** Longest wait for one request to the bucket, and for all the requests of one upload, in ms. */
  blobRequestMs: number;
  /** On SIGTERM/SIGINT, how long running jobs may finish before they are stopped; 0 stops them at once. */
  shutdownGraceMs: number;
  /** Log level of the server's JSON log. */
  /** pino level; null = by format (warn on a terminal's pretty log, info for JSON). */
  logLevel: string | null;
  /** `pretty` (text lines), `json` (pino), or `auto`: pretty when standard output is a terminal. */
  logFormat: "auto" | "pretty" | "json";
  /** Disk space held in `<dataDir>/space-reserve`, released when the disk fills; 0 keeps none. */
  spaceReserveBytes: number;
  /** Operator token of GET /metrics; null = open on self-hosted, not served on cloud/serverless. */
  metricsToken: string | null;
}

/** Flags of `flowgate serve`: name, environment variable, and one-line help. */
export const SERVE_FLAGS = {
  port: { env: "FLOWGATE_PORT", help: "port to listen on (default 8189)" },
  host: { env: "FLOWGATE_HOST", help: "interface to bind (default 127.0.0.1)" },
  "data-dir": { env: "FLOWGATE_DATA_DIR", help: "where the database and blobs live (default ./data)" },
  "database-url": {
    env: "FLOWGATE_DATABASE_URL",
    help: "postgres://user@host:port/db: keep jobs, assets and accounts in PostgreSQL instead of the SQLite file (default: none)",
  },
  "no-dispatch": {
    env: "FLOWGATE_NO_DISPATCH",
    help: "serve the API only and leave running jobs to `flowgate worker` processes (needs --database-url)",
    boolean: true,
  },
  lease: {
    env: "FLOWGATE_LEASE",
    help: "PostgreSQL: how long a worker's claim on a running job holds without a heartbeat; a dead worker's jobs end worker_lost after it, or, in front of ComfyUI, are taken over by a live worker there (others wait two leases more for one) (default 30s)",
  },
  "redis-url": {
    env: "FLOWGATE_REDIS_URL",
    help: "redis://host:port: PostgreSQL deployments pass live previews between processes through Redis pub/sub (default: none; previews over 48 KiB then stay on the worker)",
  },
  "blob-dir": { env: "FLOWGATE_BLOB_DIR", help: "where blobs live, a directory every node shares when several run (default <data-dir>/blobs)" },
  "blob-store": {
    env: "FLOWGATE_BLOB_STORE",
    help: "s3://bucket/prefix: keep blobs in an S3-compatible bucket (credentials and region the AWS SDK way: AWS_* variables, profiles), so nodes share no directory (default: the filesystem)",
  },
  "s3-endpoint": {
    env: "FLOWGATE_S3_ENDPOINT",
    help: "endpoint of an S3-compatible service for --blob-store, like http://minio:9000 (path-style addressing then) (default: AWS)",
  },
  "blob-proxy": {
    env: "FLOWGATE_BLOB_PROXY",
    help: "stream downloads of bucket blobs through this server instead of redirecting to presigned URLs, for buckets clients cannot reach",
    boolean: true,
  },
  health: {
    env: "FLOWGATE_HEALTH",
    help: "worker: answer GET /healthz and /readyz on --host:--port, for a container's or a pod's health checks (default: off; serve always answers them)",
    boolean: true,
  },
  token: { env: "FLOWGATE_TOKEN", help: "static bearer token required on v2 (default: none, open)" },
  "public-url": { env: "FLOWGATE_PUBLIC_URL", help: "origin used in signed links (default: the request's origin)" },
  "queue-limit": { env: "FLOWGATE_QUEUE_LIMIT", help: "queued jobs before queue_full (default 10000)" },
  concurrency: { env: "FLOWGATE_CONCURRENCY", help: "jobs whose graphs run at once (default 2)" },
  retention: { env: "FLOWGATE_RETENTION", help: "how long jobs and uploads are kept, like 7d, 12h, 30m (default 7d)" },
  "signing-key": { env: "FLOWGATE_SIGNING_KEY", help: "HMAC key of signed links (default: generated once per data dir)" },
  surface: { env: "FLOWGATE_SURFACE", help: "self-hosted (default), cloud or serverless" },
  "serverless-domain": { env: "FLOWGATE_SERVERLESS_DOMAIN", help: "serverless: the domain of {deployment}.run.{domain} hosts" },
  "credit-rate": { env: "FLOWGATE_CREDIT_RATE", help: "cloud/serverless: credits per second of execution (default 1)" },
  tiers: { env: "FLOWGATE_TIERS", help: "cloud: concurrent jobs per tier (default free=1,pro=3,team=10)" },
  "partner-url": { env: "FLOWGATE_PARTNER_URL", help: "vendor endpoint FlowgatePartnerCall posts to (default: none)" },
  "cache-size": { env: "FLOWGATE_CACHE_SIZE", help: "memory for the embedded engine's cached node results, like 256MB or 2GB; 0 turns it off (default 256MB)" },
  "job-memory": { env: "FLOWGATE_JOB_MEMORY", help: "tensor memory one job of the embedded engine may hold, like 1GB or 512MB (default 1GB)" },
  engine: { env: "FLOWGATE_ENGINE", help: "embedded (default) or comfyui" },
  "comfyui-url": { env: "FLOWGATE_COMFYUI_URL", help: "a ComfyUI instance for --engine comfyui; repeat it (comma-separated in the env) for several" },
  "comfyui-output-dir": {
    env: "FLOWGATE_COMFYUI_OUTPUT_DIR",
    help: "where to read ComfyUI's output files instead of fetching them with /view: its output folder on this machine, auto (default: an instance on this machine is asked for its folder, used once a first file read there equals what /view served) or off; once for all instances or once per --comfyui-url, in order",
  },
  "shutdown-grace": {
    env: "FLOWGATE_SHUTDOWN_GRACE",
    help: "on SIGTERM or SIGINT, how long running jobs may finish, like 25s or 5m; 0 stops them at once (default 25s)",
  },
  "log-level": {
    env: "FLOWGATE_LOG_LEVEL",
    help: "fatal, error, warn, info, debug (default: warn on a terminal, where requests are not listed; info otherwise)",
  },
  "log-format": { env: "FLOWGATE_LOG_FORMAT", help: "pretty (text lines), json (pino) or auto (default: pretty on a terminal, json otherwise)" },
  "space-reserve": {
    env: "FLOWGATE_SPACE_RESERVE",
    help: "disk space held back for recording job ends and deletes when the disk fills, like 8MB; 0 holds none (default 8MB)",
  },
  "max-upload-size": {
    env: "FLOWGATE_MAX_UPLOAD_SIZE",
    help: "largest file an upload may carry, like 512MB or 2GB; larger ones are 413 payload_too_large on every upload route (default 512MB)",
  },
  "max-streams-per-caller": {
    env: "FLOWGATE_MAX_STREAMS_PER_CALLER",
    help: "open v2 event streams per caller before 429 too_many_streams; callers of an open server (no --token) count per client address (default 100)",
  },
  "stream-preview-rate": {
    env: "FLOWGATE_STREAM_PREVIEW_RATE",
    help: "live previews a second at most on each v2 event stream, the latest winning (default 4; the hosted WebSocket sends every one)",
  },
  labels: {
    env: "FLOWGATE_LABELS",
    help: "on (default) or off: off declines job labels, answering a submission with metadata and a listing filtered by label with 422 metadata_not_supported",
  },
  "metrics-token": {
    env: "FLOWGATE_METRICS_TOKEN",
    help: "operator bearer token of GET /metrics (default: open on self-hosted, not served on cloud and serverless)",
  },
} as const;

/** Parses a duration like `7d`, `12h`, `30m`, `45s` or `500ms` into milliseconds; `allowZero` also takes `0`. */
export function parseDuration(text: string, { allowZero = false } = {}): number {
  if (allowZero && /^0+(\.0*)?(ms|s|m|h|d)?$/.test(text.trim())) return 0;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!m) throw new Error(`invalid duration "${text}" (use a number and one of ms, s, m, h, d)`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "ms" | "s" | "m" | "h" | "d"];
  const ms = Math.round(Number(m[1]) * unit);
  if (ms <= 0) throw new Error(`duration "${text}" must be positive`);
  return ms;
}

/** Parses a size like `256MB`, `2GB`, `512KiB` or a plain number of bytes (decimal and binary units both mean powers of 1024). */
export function parseSize(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(|b|kb|kib|k|mb|mib|m|gb|gib|g)$/i.exec(text.trim());
  if (!m) throw new Error(`invalid size "${text}" (use a number of bytes or one with KB, MB or GB)`);
  const unit = m[2]!.toLowerCase().charAt(0);
  const scale = unit === "k" ? 1024 : unit === "m" ? 1024 ** 2 : unit === "g" ? 1024 ** 3 : 1;
  return Math.floor(Number(m[1]) * scale);
}

function positiveInt(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got "${text}"`);
  return n;
}

function positiveNumber(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a number above 0, got "${text}"`);
  return n;
}

function positiveSize(name: string, text: string): number {
  const n = parseSize(text);
  if (n <= 0) throw new Error(`--${name} must be more than 0 bytes, got "${text}"`);
  return n;
}

/** The ComfyUI URLs: the repeated flag wins over the comma-separated variable. */
function comfyuiUrlsOf(flags: string[] | undefined, env: string | undefined): string[] {
  const urls = (flags && flags.length > 0 ? flags : (env ?? "").split(",")).map((u) => u.trim().replace(/\/+$/, "")).filter(Boolean);
  for (const u of urls) if (!/^https?:\/\/[^/]+/.test(u)) throw new Error(`--comfyui-url must be an http(s) URL, got "${withoutCredentials(u)}"`);
  return urls;
}

/** A URL with any user:password part (and a password= parameter) hidden, for printing. */
function withoutCredentials(url: string): string {
  return url.replace(/^([a-z]+:\/\/)[^/@]*@/, "$1(credentials)@").replace(/([?&]password=)[^&]*/i, "$1(hidden)");
}

/** The configuration from command-line arguments and the environment. */
export function loadConfig(argv: string[] = [], env: NodeJS.ProcessEnv = process.env): Config {
  const { values } = parseArgs({
    args: argv,
    options: Object.fromEntries(
      Object.entries(SERVE_FLAGS).map(([k, f]) => [
        k,
        "boolean" in f ? { type: "boolean" as const } : { type: "string" as const, multiple: k === "comfyui-url" || k === "comfyui-output-dir" },
      ]),
    ),
    strict: true,
    allowPositionals: false,
  });
  const get = (name: keyof typeof SERVE_FLAGS): string | undefined => (values[name] as string | undefined) ?? env[SERVE_FLAGS[name].env] ?? undefined;
  const surface = get("surface") ?? "self-hosted";
  if (surface !== "self-hosted" && surface !== "cloud" && surface !== "serverless") {
    throw new Error(`--surface must be self-hosted, cloud or serverless, got "${surface}"`);
  }
  const creditRate = Number(get("credit-rate") ?? 1);
  if (!Number.isFinite(creditRate) || creditRate < 0) throw new Error(`--credit-rate must be a number >= 0`);
  const serverlessDomain =
    get("serverless-domain")
      ?.toLowerCase()
      .replace(/^\.+|\.+$/g, "") || null;
  const port = Number(get("port") ?? 8189);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0..65535, got "${get("port")}"`);
  const publicUrl = get("public-url") ?? null;
  const engine = get("engine") ?? "embedded";
  if (engine !== "embedded" && engine !== "comfyui") throw new Error(`--engine must be embedded or comfyui, got "${engine}"`);
  const comfyuiUrls = engine === "comfyui" ? comfyuiUrlsOf(values["comfyui-url"] as string[] | undefined, env.FLOWGATE_COMFYUI_URL) : [];
  if (engine === "comfyui" && comfyuiUrls.length === 0) throw new Error("--engine comfyui needs --comfyui-url (or FLOWGATE_COMFYUI_URL)");
  const dirFlags = values["comfyui-output-dir"] as string[] | undefined;
  // As the URLs: the variable is ignored by the embedded engine; the flag is a mistake there.
  if (engine !== "comfyui" && dirFlags && dirFlags.length > 0) throw new Error("--comfyui-output-dir goes with --engine comfyui");
  const dirs = engine === "comfyui" ? (dirFlags && dirFlags.length > 0 ? dirFlags : (env.FLOWGATE_COMFYUI_OUTPUT_DIR ?? "").split(",")) : [];
  const comfyuiOutputDirs = dirs.map((d) => d.trim()).filter(Boolean);
  if (comfyuiOutputDirs.length > 1 && comfyuiOutputDirs.length !== comfyuiUrls.length) {
    throw new Error(
      `--comfyui-output-dir: give one folder for all instances or one per --comfyui-url (${comfyuiUrls.length}), got ${comfyuiOutputDirs.length}`,
    );
  }
  if (publicUrl !== null && !/^https?:\/\/[^/]+/.test(publicUrl)) throw new Error(`--public-url must be an http(s) URL`);
  const databaseUrl = get("database-url") || null;
  if (databaseUrl !== null && !/^postgres(ql)?:\/\/[^/]*\/?/.test(databaseUrl)) throw new Error(`--database-url must be a postgres:// URL`);
  const blobDir = get("blob-dir") || null;
  const blobStore = get("blob-store") || null;
  if (blobStore !== null && !/^s3:\/\/[^/]+/.test(blobStore)) throw new Error(`--blob-store must be s3://bucket/prefix, got "${blobStore}"`);
  if (blobStore !== null && blobDir !== null) throw new Error("--blob-store and --blob-dir exclude each other: blobs live in the bucket or in the directory");
  const s3Endpoint = get("s3-endpoint")?.replace(/\/+$/, "") || null;
  if (s3Endpoint !== null && !/^https?:\/\/[^/]+/.test(s3Endpoint)) throw new Error(`--s3-endpoint must be an http(s) URL`);
  if (s3Endpoint !== null && blobStore === null) throw new Error("--s3-endpoint goes with --blob-store s3://...");
  const blobProxy = values["blob-proxy"] === true || /^(1|true|yes)$/i.test(env.FLOWGATE_BLOB_PROXY ?? "");
  const health = values.health === true || /^(1|true|yes)$/i.test(env.FLOWGATE_HEALTH ?? "");
  const signingKey = get("signing-key") || null;
  // deploy/systemd/flowgate.env's placeholder: a key everyone can read signs links anyone could forge.
  if (signingKey?.startsWith("change-me"))
    throw new Error("--signing-key is still the placeholder of flowgate.env: set it to the output of `openssl rand -hex 32`");
  const redisUrl = get("redis-url") || null;
  if (redisUrl !== null && !/^rediss?:\/\/[^/]+/.test(redisUrl)) throw new Error("--redis-url must be a redis:// URL");
  if (redisUrl !== null && databaseUrl === null)
    throw new Error("--redis-url needs --database-url: it carries previews between the processes of a PostgreSQL deployment");
  const labels = get("labels") ?? "on";
  if (labels !== "on" && labels !== "off") throw new Error(`--labels must be on or off, got "${labels}"`);
  const logLevel = get("log-level") || null;
  if (logLevel !== null && !LOG_LEVELS.includes(logLevel)) throw new Error(`--log-level must be one of ${LOG_LEVELS.join(", ")}, got "${logLevel}"`);
  const logFormat = get("log-format") || "auto";
  if (!["auto", "pretty", "json"].includes(logFormat)) throw new Error(`--log-format must be pretty, json or auto, got "${logFormat}"`);
  const noDispatch = values["no-dispatch"] === true || /^(1|true|yes)$/i.test(env.FLOWGATE_NO_DISPATCH ?? "");
  if (noDispatch && databaseUrl === null) throw new Error("--no-dispatch needs --database-url: API nodes and workers share jobs through PostgreSQL");
  return {
    host: get("host") ?? "127.0.0.1",
    port,
    dataDir: path.resolve(get("data-dir") ?? "data"),
    databaseUrl,
    dispatch: !noDispatch,
    leaseMs: parseDuration(get("lease") ?? "30s"),
    blobDir: blobDir === null ? null : path.resolve(blobDir),
    blobStore,
    s3Endpoint,
    blobProxy,
    health,
    redisUrl,
    token: get("token") || null,
    publicUrl: publicUrl?.replace(/\/+$/, "") ?? null,
    queueLimit: positiveInt("queue-limit", get("queue-limit") ?? "10000"),
    concurrency: positiveInt("concurrency", get("concurrency") ?? "2"),
    retentionMs: parseDuration(get("retention") ?? "7d"),
    signingKey,
    surface,
    serverlessDomain,
    creditRate,
    tiers: get("tiers") ? parseTiers(get("tiers")!) : DEFAULT_TIERS,
    engine,
    comfyuiUrls,
    comfyuiOutputDirs,
    partnerUrl: get("partner-url") || null,
    cacheBytes: parseSize(get("cache-size") ?? "256MB"),
    jobMemoryBytes: positiveSize("job-memory", get("job-memory") ?? "1GB"),
    bodyLimit: 10 * 1024 * 1024,
    maxUploadBytes: positiveSize("max-upload-size", get("max-upload-size") ?? "512MB"),
    urlTtlMs: 60 * 60 * 1000,
    maxStreamsPerCaller: positiveInt("max-streams-per-caller", get("max-streams-per-caller") ?? "100"),
    streamPreviewRate: positiveNumber("stream-preview-rate", get("stream-preview-rate") ?? "4"),
    labels: labels === "on",
    sseKeepAliveMs: 15_000,
    wsPingIntervalMs: 30_000,
    logLimitBytes: 64 * 1024,
    reaperIntervalMs: 60_000,
    blobWaitMs: 60_000,
    blobRequestMs: 60_000,
    shutdownGraceMs: parseDuration(get("shutdown-grace") ?? "25s", { allowZero: true }),
    logLevel,
    logFormat: logFormat as Config["logFormat"],
    spaceReserveBytes: parseSize(get("space-reserve") ?? "8MB"),
    metricsToken: get("metrics-token") || null,
  };
}

/** pino's levels, quietest last. */
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace"];

/** The settings as printed at start: secrets shown only as set or unset. */
export function describeConfig(c: Config): Record<string, unknown> {
  return {
    surface: c.surface,
    engine: c.engine,
    host: c.host,
    port: c.port,
    dataDir: c.dataDir,
    database: c.databaseUrl === null ? "sqlite" : withoutCredentials(c.databaseUrl),
    ...(c.blobDir === null ? {} : { blobDir: c.blobDir }),
    ...(c.blobStore === null
      ? {}
      : { blobStore: c.blobStore, s3Endpoint: c.s3Endpoint === null ? "(aws)" : withoutCredentials(c.s3Endpoint), blobProxy: c.blobProxy }),
    ...(c.redisUrl === null ? {} : { redis: withoutCredentials(c.redisUrl) }),
    ...(c.databaseUrl === null ? {} : { dispatch: c.dispatch, lease: `${c.leaseMs / 1000}s` }),
    token: c.token ? "(set)" : "(none: open)",
    metricsToken: c.metricsToken ? "(set)" : "(none)",
    publicUrl: c.publicUrl ?? "(request origin)",
    queueLimit: c.queueLimit,
    concurrency: c.concurrency,
    maxUploadSize: `${Math.round(c.maxUploadBytes / 1024 / 1024)}MB`,
    maxStreamsPerCaller: c.maxStreamsPerCaller,
    ...(c.labels ? {} : { labels: "off" }),
    retention: `${c.retentionMs / 3_600_000}h`,
    signingKey: c.signingKey ? "(set)" : "(per data dir)",
    partnerUrl: c.partnerUrl ?? "(none)",
    shutdownGrace: `${c.shutdownGraceMs / 1000}s`,
    spaceReserve: `${Math.round(c.spaceReserveBytes / 1024 / 1024)}MB`,
    ...(c.engine === "embedded"
      ? { cacheSize: `${Math.round(c.cacheBytes / 1024 / 1024)}MB`, jobMemory: `${Math.round(c.jobMemoryBytes / 1024 / 1024)}MB` }
      : {}),
    ...(c.engine === "comfyui" ? { comfyuiUrls: c.comfyuiUrls.map(withoutCredentials).join(",") } : {}),
    ...(c.comfyuiOutputDirs.length > 0 ? { comfyuiOutputDirs: c.comfyuiOutputDirs.join(",") } : {}),
  };
}

/** One line of settings for the start-up banner; never a secret. */
export function settingsLine(config: Config): string {
  return Object.entries(describeConfig(config))
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
}
