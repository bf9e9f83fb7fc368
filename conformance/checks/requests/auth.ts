// AUTH: credentials: bearer on v2, the self-hosted default, anonymous callers, 401 and 403, the
// hosted interface's X-API-Key and WebSocket token, and the key forwarded to partner nodes.
import { routes, type RouteSpec } from "../../../generated/routes.ts";
import { check, type RunContext, type T } from "../../check.ts";
import type { Auth } from "../../machinery/http.ts";
import { HostedSocket } from "../../machinery/socket.ts";
import { isJobApiPath } from "../hosted/hjob.ts";
import { notHosted } from "../support/hosted-client.ts";
import { readJobOk, submit, submitOk } from "../support/jobs.ts";
import { codeOf, multipart, pngBytes } from "../support/support.ts";
import { simpleGraph } from "../support/workflows.ts";

const bogus = () => `conformance-invalid-${crypto.randomUUID()}`;
/** Credentials are required: a token was given and the target is not the demo deployment. */
const authRequired = (r: RunContext) =>
  r.options.demo
    ? "--demo was given: the demo deployment takes anonymous callers"
    : r.options.token
      ? undefined
      : "no --token given: the run takes the surface as open to anonymous callers (pass its API key as --token)";

/** Path parameters of the operations, as a well-formed request carries them. */
const PATH_SAMPLES: Record<string, () => string> = {
  id: () => crypto.randomUUID(),
  prompt_id: () => crypto.randomUUID(),
  job_id: () => crypto.randomUUID(),
  hash: () => `blake3:${"0".repeat(64)}`,
  node_class: () => "SaveImage",
};

/** Bodies an operation accepts, so that only the credentials are wrong. */
function sampleBody(route: RouteSpec): { json?: unknown; body?: Uint8Array; headers?: Record<string, string> } {
  if (!route.requestBody) return {};
  if (route.requestBody.contentTypes.includes("multipart/form-data")) {
    const field = route.family === "v2" ? "file" : "image";
    const { body, contentType } = multipart([{ name: field, value: pngBytes(2, 2, [1, 2, 3, 255]), filename: "conformance.png", contentType: "image/png" }]);
    return { body, headers: { "content-type": contentType } };
  }
  const json: Record<string, unknown> = {
    createJob: { workflow: simpleGraph() },
    createAssetFromHash: { hash: PATH_SAMPLES.hash!() },
    hostedQueuePrompt: { prompt: simpleGraph() },
    hostedManageQueue: { delete: [crypto.randomUUID()] },
    hostedManageHistory: { delete: [crypto.randomUUID()] },
    hostedCancelJobs: { job_ids: [crypto.randomUUID()] },
  };
  return { json: json[route.operationId] ?? {} };
}

/**
 * Every operation of one interface that documents a 401, sent without credentials and with an
 * invalid key: each must be refused with 401 before anything else is looked at.
 */
async function everyOperationRefused(t: T, family: "v2" | "hosted", invalid: Auth): Promise<void> {
  let ops = routes.filter((r) => r.family === family && !r.websocket && r.responses["401"]);
  // ComfyUI's job API is an extension (HJOB): a surface without it answers 404 to its paths, with a key or without.
  if (family === "hosted" && (await t.http.request("GET", t.http.url("/api/jobs?limit=1"))).status === 404) ops = ops.filter((r) => !isJobApiPath(r.path));
  for (const route of ops) {
    const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(PATH_SAMPLES[name]?.() ?? "conformance"));
    const query = route.operationId === "hostedView" ? "?filename=conformance.png&subfolder=&type=input" : "";
    for (const [what, auth] of [
      ["no credentials", "none"],
      ["an invalid key", invalid],
    ] as const) {
      const ex = await t.http.request(route.method, t.http.url(path + query), { ...sampleBody(route), auth });
      const code = family === "v2" && route.method !== "HEAD" ? codeOf(ex.json) : undefined;
      t.expect(
        ex.status === 401 && (code === undefined || code === "unauthorized"),
        `${route.operationId} (${route.method} ${route.path}) with ${what} answered ${ex.status} ${code ?? ""}`.trimEnd(),
        ex,
      );
    }
  }
}

export default [
  check(
    "AUTH-1 v2 takes the key as Authorization: Bearer <key>",
    { when: (r) => (r.options.token ? undefined : "no --token given (pass the surface's API key as --token)") },
    async (t: T) => {
      const token = t.options.token!;
      const ref = await submitOk(t, simpleGraph(), { auth: { bearer: token } });
      await readJobOk(t, ref, { bearer: token });
    },
  ),

  check("AUTH-2 self-hosted accepts anonymous callers by default, or exactly its static token", { surfaces: ["self-hosted"] }, async (t: T) => {
    if (!t.options.token) {
      const { ex } = await submit(t, simpleGraph(), { auth: "none" });
      t.expect(ex.status === 201, `an anonymous submission answered ${ex.status}`, ex);
      return;
    }
    const ok = await submit(t, simpleGraph());
    t.expect(ok.ex.status === 201, `the static token was refused (${ok.ex.status})`, ok.ex);
    for (const [what, auth] of [
      ["no token", "none"],
      ["another token", { bearer: bogus() }],
    ] as const) {
      const { ex } = await submit(t, simpleGraph(), { auth });
      t.expect(ex.status === 401, `${what}: expected 401, got ${ex.status}`, ex);
    }
  }),

  check(
    "AUTH-3 operations work without credentials where the surface takes anonymous callers",
    {
      when: (r) =>
        r.options.demo || (r.options.surface === "self-hosted" && !r.options.token)
          ? undefined
          : r.options.token
            ? "a --token was given: the run takes the surface as closed to anonymous callers (AUTH-4 checks their 401)"
            : `the ${r.options.surface} surface is not open to anonymous callers (only self-hosted without a token, or --demo, is)`,
    },
    async (t: T) => {
      const ref = await submitOk(t, simpleGraph(), { auth: "none" });
      await readJobOk(t, ref, "none");
      const cancel = await t.http.request("POST", t.http.url(`/api/v2/jobs/${ref.job.id}/cancel`), { auth: "none" });
      t.expect(cancel.status === 200, `an anonymous cancel answered ${cancel.status}`, cancel);
    },
  ),

  check("AUTH-4 missing or invalid credentials are 401 unauthorized", { when: authRequired }, async (t: T) => {
    const ref = await submitOk(t, simpleGraph());
    for (const [what, auth] of [
      ["no credentials", "none"],
      ["an invalid key", { bearer: bogus() }],
    ] as const) {
      const post = await submit(t, simpleGraph(), { auth });
      t.expect(
        post.ex.status === 401 && codeOf(post.ex.json) === "unauthorized",
        `POST with ${what}: ${post.ex.status} ${codeOf(post.ex.json) ?? ""}`,
        post.ex,
      );
      const get = await t.http.request("GET", t.http.url(`/api/v2/jobs/${ref.job.id}`), { auth });
      t.expect(get.status === 401 && codeOf(get.json) === "unauthorized", `GET with ${what}: ${get.status} ${codeOf(get.json) ?? ""}`, get);
    }
  }),

  check("AUTH-4 every v2 operation answers 401 unauthorized to missing or invalid credentials", { when: authRequired }, async (t: T) => {
    await everyOperationRefused(t, "v2", { bearer: bogus() });
  }),

  check(
    "AUTH-4 an authenticated caller who is not allowed gets 403 forbidden",
    {
      when: (r) => (r.options.forbiddenToken ? undefined : "no caller who is not allowed given (pass --forbidden-token)"),
    },
    async (t: T) => {
      const { ex } = await submit(t, simpleGraph(), { auth: { bearer: t.options.forbiddenToken! } });
      t.expect(ex.status === 403 && codeOf(ex.json) === "forbidden", `expected 403 forbidden, got ${ex.status} ${codeOf(ex.json) ?? ""}`, ex);
    },
  ),

  check(
    "AUTH-5 the hosted interface takes X-API-Key on REST and the token query parameter on /ws",
    {
      when: (r) => (!r.caps.hosted ? notHosted(r.caps.hostedProbe) : authRequired(r)),
    },
    async (t: T) => {
      const token = t.options.token!;
      const ok = await t.http.request("GET", t.http.url("/api/object_info"), { auth: { apiKey: token } });
      t.expect(ok.status === 200, `X-API-Key answered ${ok.status}`, ok);
      const none = await t.http.request("GET", t.http.url("/api/object_info"), { auth: "none" });
      t.expect(none.status === 401, `no X-API-Key answered ${none.status}`, none);
      const withToken = await HostedSocket.open(t.http, { token });
      withToken.socket?.close();
      t.expect(!!withToken.socket, `/ws with the token refused the upgrade (${withToken.status})`);
      const without = await HostedSocket.open(t.http, { token: null });
      without.socket?.close();
      t.expect(without.status === 401, `/ws without a token answered ${without.socket ? "with an open socket" : without.status}`);
    },
  ),

  check(
    "AUTH-5 every hosted operation answers 401 without X-API-Key or with an invalid one",
    { when: (r) => (!r.caps.hosted ? notHosted(r.caps.hostedProbe) : authRequired(r)) },
    async (t: T) => {
      await everyOperationRefused(t, "hosted", { apiKey: bogus() });
    },
  ),

  check("AUTH-6 the caller's key is accepted in extra_data.api_key_vendor_org for partner nodes", async (t: T) => {
    const key = t.options.token ?? `conformance-secret-${crypto.randomUUID()}`;
    t.http.secrets.add(key);
    const { ex } = await submit(t, simpleGraph(), { extraData: { api_key_vendor_org: key } });
    t.expect(ex.status === 201, `a submission carrying the key in extra_data answered ${ex.status}`, ex);
  }),
];
