// The flowgate package: the high-level clients of the v2 job interface and of the hosted
// (ComfyUI-compatible) interface, their errors and the contract types they speak.
export { FlowgateClient, DEFAULT_BASE_URL } from "./client/v2-client.ts";
export type { FlowgateClientOptions, JobRef, ListOptions, SubmitOptions, UploadOptions, UploadResult } from "./client/v2-client.ts";
export type { WaitOptions } from "./client/job-wait.ts";
export type { JobEvent, StreamOptions } from "./client/job-stream.ts";
export type { Downloadable, DownloadResult } from "./client/download.ts";
export type { RetryOptions } from "./client/transport.ts";
export type { Sleep } from "./client/retry.ts";
export type { UploadSource } from "./client/local-files.ts";
export { resolveLink } from "./client/links.ts";

export { HostedClient, HOSTED_TERMINAL_STATUSES, isHostedTerminal } from "./client/hosted-client.ts";
export type { HostedClientOptions, HostedTerminalStatus } from "./client/hosted-client.ts";
export { HostedSocket } from "./client/hosted-socket.ts";
export type { HostedSocketEvent, HostedSocketOptions } from "./client/hosted-socket.ts";

export * from "./client/errors.ts";
export { TERMINAL_STATUSES, isTerminalStatus, assetReference } from "./client/types.ts";
export type * from "./client/types.ts";

/** This package's version, read from its package.json (the client sends it in its User-Agent). */
export { VERSION } from "./domain/version.ts";

/** The generated SDK: one function per operation (see src/client/sdk.ts). */
export * as sdk from "./client/sdk.ts";
