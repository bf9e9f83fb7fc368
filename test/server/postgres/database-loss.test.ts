// A server on PostgreSQL that loses its database: requests answer 500 upstream_error and /readyz
// 503 while it is gone, and service resumes by itself when it returns. The database is cut by a
// TCP relay of the test's own between the server and PostgreSQL, and the server's connections
// are also ended from the server side (pg_terminate_backend on this test's application_name).
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminQuery, createTestSchema, dropTestSchema, onPostgres, TEST_DATABASE_URL } from "../../postgres/pg.ts";
import { delayGraph, expectError, startTestServer, type TestServer } from "../helpers.ts";

/** A relay to PostgreSQL that can drop every connection and refuse new ones until restored. */
class Relay {
  readonly server: net.Server;
  readonly sockets = new Set<net.Socket>();
  down = false;

  constructor(target: URL) {
    this.server = net.createServer((client) => {
      if (this.down) return void client.destroy();
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("error", () => undefined);
        s.on("close", () => this.sockets.delete(s));
      }
      client.pipe(upstream).pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return (this.server.address() as net.AddressInfo).port;
  }

  cut(): void {
    this.down = true;
    for (const s of this.sockets) s.destroy();
  }

  restore(): void {
    this.down = false;
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Polls `probe` until it returns true, failing after `ms`. */
async function until(what: string, probe: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`${what}: not in time`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

await onPostgres(
  () => undefined,
  async () => {
    let schema = "";
    let relay: Relay;
    let s: TestServer;
    beforeAll(async () => {
      schema = await createTestSchema();
      relay = new Relay(new URL(TEST_DATABASE_URL));
      const url = new URL(TEST_DATABASE_URL);
      url.host = `127.0.0.1:${await relay.listen()}`;
      url.searchParams.set("options", `-c search_path=${schema}`);
      url.searchParams.set("application_name", schema);
      s = await startTestServer({ flags: ["--database-url", url.toString()] });
    });
    afterAll(async () => {
      await s?.stop();
      await relay?.close();
      if (schema) await dropTestSchema(schema);
    });

    describe("a lost database connection", () => {
      it("gives 500 upstream_error and /readyz 503 while the database is gone, and service resumes when it returns", async () => {
        const job = await s.api.submit(delayGraph(10));
        expect((await s.api.get("/readyz")).status).toBe(200);

        relay.cut();
        const lost = await s.api.get(`/api/v2/jobs/${job.id}`);
        expectError(lost, 500, "upstream_error");
        expect(lost.text).not.toMatch(/ECONN|terminat|postgres|SELECT/i);
        const ready = await s.api.get("/readyz");
        expect(ready.status).toBe(503);
        expect(ready.body.checks.store).toBe(false);

        relay.restore();
        await until("the job readable again", async () => (await s.api.get(`/api/v2/jobs/${job.id}`)).status === 200);
        await until("ready again", async () => (await s.api.get("/readyz")).status === 200);
        await s.api.submit(delayGraph(10)); // 201 again
      });

      it("replaces connections PostgreSQL ends (pg_terminate_backend) without a restart", async () => {
        const job = await s.api.submit(delayGraph(10));
        const backends = async () => (await adminQuery("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [schema])).length;
        await until("the server connected", async () => (await backends()) > 0);
        await adminQuery("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [schema]);
        await until("the server reconnected", async () => (await s.api.get(`/api/v2/jobs/${job.id}`)).status === 200);
        expect(await backends()).toBeGreaterThan(0);
        // Readiness follows the heartbeat's next renewal, on a connection of its own that was ended too.
        await until("ready again", async () => (await s.api.get("/readyz")).status === 200);
      });
    });
  },
);
