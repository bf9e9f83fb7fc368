// Redis for the tests: the machine's server (127.0.0.1:6379, or FLOWGATE_TEST_REDIS_URL).
import { createClient } from "@redis/client";

/** The Redis the tests use. */
export const TEST_REDIS_URL = process.env.FLOWGATE_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

let reachable: Promise<string | null> | undefined;

/** Why the Redis tests cannot run here, or null when they can. On CI an unreachable server is a failure: CI starts it. */
export function redisUnavailable(): Promise<string | null> {
  reachable ??= (async () => {
    const client = createClient({ url: TEST_REDIS_URL, socket: { connectTimeout: 3000, reconnectStrategy: false } });
    client.on("error", () => undefined);
    try {
      await client.connect();
      await client.ping();
      return null;
    } catch (error) {
      const reason = `Redis unreachable at ${TEST_REDIS_URL} (${(error as Error).message}); set FLOWGATE_TEST_REDIS_URL or start it`;
      if (process.env.CI) throw new Error(reason);
      return reason;
    } finally {
      if (client.isOpen) await client.close().catch(() => undefined);
    }
  })();
  return reachable;
}
