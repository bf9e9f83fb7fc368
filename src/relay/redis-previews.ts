// Previews across processes on Redis pub/sub (`--redis-url`). Previews are the one event too
// large for a PostgreSQL notification (an image, often tens of KiB, many per second), and the one
// that may be lost: a newer preview replaces it. Pub/sub fits that: fire and forget, nothing
// kept, no image bytes in the database's notification queue or its WAL.
import { createClient } from "@redis/client";
import { hostAndPort, networkReason } from "../domain/network-errors.ts";
import type { RunEvent } from "./event-relay.ts";

type Preview = Extract<RunEvent, { type: "preview" }>;
type RedisClient = ReturnType<typeof createClient>;

const CONNECT_TIMEOUT_MS = 5_000;

/** A message: one JSON line (sender and the preview's fields), then the image's bytes. */
function encode(sender: string, e: Preview): Buffer {
  const header = JSON.stringify({ sender, job_id: e.job_id, owner: e.owner, node_id: e.node_id, content_type: e.content_type });
  return Buffer.concat([Buffer.from(`${header}\n`, "utf8"), e.data]);
}

function decode(message: Buffer): { sender: string; preview: Preview } | null {
  const newline = message.indexOf(10);
  if (newline < 0) return null;
  try {
    const h = JSON.parse(message.toString("utf8", 0, newline)) as Record<string, unknown>;
    if (
      typeof h.sender !== "string" ||
      typeof h.job_id !== "string" ||
      typeof h.owner !== "string" ||
      typeof h.node_id !== "string" ||
      typeof h.content_type !== "string"
    )
      return null;
    return {
      sender: h.sender,
      preview: { type: "preview", job_id: h.job_id, owner: h.owner, node_id: h.node_id, content_type: h.content_type, data: message.subarray(newline + 1) },
    };
  } catch {
    return null;
  }
}

/** Publishes and hears the previews of one deployment on one channel. */
export class RedisPreviews {
  readonly #publisher: RedisClient;
  readonly #channel: string;
  #subscriber: RedisClient | null = null;

  private constructor(publisher: RedisClient, channel: string) {
    this.#publisher = publisher;
    this.#channel = channel;
  }

  /** Connects (within 5 s, else a clear error); it reconnects by itself after. */
  static async open(url: string, channel: string): Promise<RedisPreviews> {
    // Named by host only: the URL may hold a password.
    const where = hostAndPort(url, 6379);
    const publisher = await connect(
      createClient({ url, socket: { connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 2_000) } }),
      where,
    );
    return new RedisPreviews(publisher, channel);
  }

  /** Sends a preview; one that cannot be sent now is dropped (a newer one follows). */
  publish(sender: string, e: Preview): void {
    if (!this.#publisher.isReady) return;
    this.#publisher.publish(this.#channel, encode(sender, e)).catch(() => undefined);
  }

  /** Calls `onPreview` for every preview published on the channel; returns the stop. */
  async subscribe(onPreview: (sender: string, preview: Preview) => void): Promise<() => Promise<void>> {
    const subscriber = await connect(this.#publisher.duplicate(), "the same Redis");
    this.#subscriber = subscriber;
    await subscriber.subscribe(
      this.#channel,
      (message: Buffer) => {
        const got = decode(message);
        if (got) onPreview(got.sender, got.preview);
      },
      true,
    );
    return async () => {
      this.#subscriber = null;
      await subscriber.close().catch(() => undefined);
    };
  }

  async close(): Promise<void> {
    await this.#subscriber?.close().catch(() => undefined);
    await this.#publisher.close().catch(() => undefined);
  }
}

async function connect(client: RedisClient, where: string): Promise<RedisClient> {
  // It reconnects by itself; previews meanwhile are dropped. The last failure explains a timeout.
  let reason: string | null = null;
  client.on("error", (err: unknown) => (reason = networkReason(err) ?? reason));
  let timer: NodeJS.Timeout | undefined;
  const timeout = () => new Error(`cannot reach Redis at ${where} (${reason ?? `no answer within ${CONNECT_TIMEOUT_MS / 1000} s`}); check --redis-url`);
  try {
    await Promise.race([client.connect(), new Promise((_, reject) => (timer = setTimeout(() => reject(timeout()), CONNECT_TIMEOUT_MS)))]);
    return client;
  } catch (err) {
    client.destroy();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
