// Label values and filters that one store could keep and the other not (NUL, a lone surrogate)
// get the same answer on SQLite and PostgreSQL, never a 5xx; and `metadata[__proto__]=x`, a key
// the contract accepts, filters like any other key instead of being dropped.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v from "../../generated/validators.js";
import { postgresUnavailable } from "../postgres/pg.ts";
import { expectError, imageGraph, startTestServer, unique, useDatabase, type TestServer } from "../server/helpers.ts";

const noPostgres = await postgresUnavailable();

for (const kind of ["sqlite", "postgres"] as const) {
  describe.skipIf(kind === "postgres" && noPostgres !== null)(`label inputs on ${kind}`, () => {
    let s: TestServer;
    beforeAll(async () => {
      useDatabase(kind);
      s = await startTestServer();
      useDatabase("sqlite");
    });
    afterAll(async () => {
      await s?.stop();
    });

    const submit = (metadata: Record<string, string>) => s.api.post("/api/v2/jobs", { workflow: imageGraph("labels"), metadata });

    it("a value with NUL or a lone surrogate is 422 metadata_invalid", async () => {
      for (const value of ["a\u0000b", "\ud800", "x\udc00y"]) {
        const res = await submit({ k: value });
        expectError(res, 422, "metadata_invalid", v.response_createJob_422);
      }
      // A surrogate pair is one well-formed character: kept as given.
      const ok = await submit({ k: "cat \ud83d\ude00" });
      expect(ok.status, ok.text).toBe(201);
      expect(ok.body.metadata).toEqual({ k: "cat \ud83d\ude00" });
    });

    it("a filter value with NUL or a lone surrogate is 400 invalid_metadata_filter", async () => {
      for (const q of ["metadata[k]=%00", "metadata[k]=a%00", "metadata[k]=%ED%A0%80"]) {
        const res = await s.api.get(`/api/v2/jobs?${q}`);
        if (res.status === 200)
          expect(res.body.jobs, q).toEqual([]); // %ED%A0%80 may decode to U+FFFD, a plain value
        else expectError(res, 400, "invalid_metadata_filter", v.response_listJobs_400);
      }
      expectError(await s.api.get("/api/v2/jobs?metadata[k]=%00"), 400, "invalid_metadata_filter");
    });

    it("metadata[__proto__]=x filters on the key __proto__", async () => {
      const value = unique("proto");
      // A JSON body keeps __proto__ as a key (JSON.parse defines it, and JSON.stringify sends it).
      const raw = await s.api.post("/api/v2/jobs", JSON.parse(`{"workflow": ${JSON.stringify(imageGraph("labels"))}, "metadata": {"__proto__": "${value}"}}`));
      expect(raw.status, raw.text).toBe(201);
      await submit({ plain: value });
      const listed = await s.api.get(`/api/v2/jobs?metadata[__proto__]=${value}`);
      expect(listed.status, listed.text).toBe(200);
      expect(listed.body.jobs.map((j: { id: string }) => j.id)).toEqual([raw.body.id]);
    });
  });
}
