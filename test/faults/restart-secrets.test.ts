// A partner key lives in memory only: a job still queued when the server stops cannot run as
// submitted after the restart, so it ends failed with `partner_key_lost` (not a misleading
// `partner_node_error`), and the key is in no file of the data dir.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { delayGraph, expectValid, filesContaining, imageGraph, startTestServer, v, type TestServer } from "../server/helpers.ts";

const KEY = "sk-partner-restart-0123456789abcdef";
let dataDir = "";
const servers: TestServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const partnerGraph = {
  "1": { class_type: "FlowgatePartnerCall", inputs: { prompt: "hi" } },
  "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
};

it("a queued job given a partner key fails partner_key_lost after a restart; others run", async () => {
  dataDir = await mkdtemp(join(tmpdir(), "flowgate-restart-secrets-"));
  const first = await startTestServer({ flags: ["--concurrency", "1"], config: { dataDir } });
  servers.push(first);
  const blocker = await first.api.submit(delayGraph(120));
  await first.api.waitJob(blocker.id, (j) => j.status === "running");
  const withKey = await first.api.submit(partnerGraph, { extra_data: { api_key_vendor_org: KEY } });
  const plain = await first.api.submit(imageGraph("after-restart"));
  await first.close();

  const second = await startTestServer({ flags: ["--concurrency", "1"], config: { dataDir } });
  servers.push(second);
  const lost = await second.api.waitTerminal(withKey.id);
  expect(lost.status).toBe("failed");
  expectValid(v.schema_JobError, lost.error);
  expect(lost.error.code).toBe("partner_key_lost");
  expect(lost.started_at).not.toBeNull(); // queued -> running -> failed, as the state machine allows
  expect((await second.api.waitTerminal(plain.id)).status).toBe("succeeded");
  // The server still runs: a staged output's temp file may go between listing and reading.
  expect(await filesContaining(dataDir, KEY)).toEqual([]);
});
