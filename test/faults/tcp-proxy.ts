// A TCP proxy between flowgate processes and PostgreSQL or Redis that makes faults on demand: cut
// every connection (and refuse new ones until healed), stall them (bytes held, sockets open), or
// cut one connection just after it sent a given message (its answer is lost, what it asked is done).
import net from "node:net";

/** A connection through the proxy: both sockets, and bytes held back while stalled. */
interface Link {
  client: net.Socket;
  upstream: net.Socket;
  /** Chunks held back while stalled, per direction. */
  toUpstream: Buffer[];
  toClient: Buffer[];
  /** Held by `stallMatching`: nothing passes either way until `heal`. */
  held: boolean;
  /** Where this connection is in an armed cut: 1 once it sent `sent`, until the next answer. */
  stage: 0 | 1;
}

/** A cut armed by `loseAnswer`: once a connection sent `sent` and its answer matches `answer`, that answer is lost. */
interface ArmedCut {
  sent: RegExp;
  answer: RegExp;
  fired: () => void;
}

/** A proxy to `target` (host:port) listening on a free port of 127.0.0.1. */
export class TcpProxy {
  readonly #server: net.Server;
  readonly #links = new Set<Link>();
  readonly #target: { host: string; port: number };
  #mode: "open" | "cut" | "stalled" = "open";
  #armed: ArmedCut | null = null;
  #stallPattern: RegExp | null = null;
  /** Told when `stallMatching` first holds a connection. */
  #stallHeld: (() => void) | null = null;
  /** Connections refused while cut (each is a client's attempt to reconnect). */
  refused = 0;
  /** Connections accepted since the start. */
  accepted = 0;
  port = 0;

  constructor(target: { host: string; port: number }) {
    this.#target = target;
    this.#server = net.createServer((client) => this.#accept(client));
  }

  /** Starts listening; resolves with the port. */
  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.port = (this.#server.address() as net.AddressInfo).port;
    return this.port;
  }

  /** `url` (postgres:// or redis://) pointed at this proxy. */
  urlFor(url: string): string {
    const u = new URL(url);
    u.host = `127.0.0.1:${this.port}`;
    return u.toString();
  }

  /** Ends every connection and refuses new ones until `heal`. */
  cut(): void {
    this.#mode = "cut";
    for (const link of [...this.#links]) this.#drop(link);
  }

  /** Holds every byte in both directions (connections stay open, new ones are accepted and held) until `heal`. */
  stall(): void {
    this.#mode = "stalled";
  }

  /**
   * Stalls each connection that sends something matching `pattern`, from that message on (it is
   * held too), until `heal`; other connections flow. A partition of one kind of traffic (a
   * process's lease renewals) while the rest passes. Resolves once a connection is held.
   */
  stallMatching(pattern: RegExp): Promise<void> {
    this.#stallPattern = pattern;
    return new Promise((held) => (this.#stallHeld = held));
  }

  /** Back to normal: new connections pass, stalled bytes flow on. */
  heal(): void {
    this.#mode = "open";
    this.#stallPattern = null;
    for (const link of this.#links) {
      link.held = false;
      this.#release(link);
    }
  }

  /**
   * Arms a one-shot cut: the first connection that sends something matching `sent` and is
   * answered (before it sends anything else) something matching `answer` never hears that answer:
   * it is ended with every other connection, and new ones are refused until `heal`. Resolves once
   * it fired. (A claim that took a job and committed, its answer lost.)
   */
  loseAnswer(sent: RegExp, answer: RegExp): Promise<void> {
    return new Promise((fired) => (this.#armed = { sent, answer, fired }));
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(client: net.Socket): void {
    if (this.#mode === "cut") {
      this.refused++;
      client.destroy();
      return;
    }
    this.accepted++;
    const upstream = net.connect(this.#target.port, this.#target.host);
    const link: Link = { client, upstream, toUpstream: [], toClient: [], held: false, stage: 0 };
    this.#links.add(link);
    for (const s of [client, upstream]) {
      s.on("error", () => undefined);
      s.on("close", () => this.#drop(link));
    }
    client.on("data", (chunk: Buffer) => this.#fromClient(link, chunk));
    upstream.on("data", (chunk: Buffer) => {
      const armed = this.#armed;
      if (armed && link.stage === 1 && armed.answer.test(chunk.toString("latin1"))) {
        // The server did the work and answered; the client never hears it.
        this.#armed = null;
        this.#mode = "cut";
        for (const any of [...this.#links]) this.#drop(any);
        armed.fired();
        return;
      }
      link.stage = 0;
      if (this.#mode === "stalled" || link.held) link.toClient.push(chunk);
      else client.write(chunk);
    });
  }

  #fromClient(link: Link, chunk: Buffer): void {
    if (!link.held && this.#stallPattern?.test(chunk.toString("latin1"))) {
      link.held = true;
      this.#stallHeld?.();
      this.#stallHeld = null;
    }
    if (this.#mode === "stalled" || link.held) {
      link.toUpstream.push(chunk);
      return;
    }
    if (this.#armed?.sent.test(chunk.toString("latin1"))) link.stage = 1; // its answer is the next thing the server sends
    link.upstream.write(chunk);
  }

  #release(link: Link): void {
    for (const chunk of link.toUpstream.splice(0)) this.#fromClient(link, chunk);
    for (const chunk of link.toClient.splice(0)) link.client.write(chunk);
  }

  #drop(link: Link): void {
    if (!this.#links.delete(link)) return;
    link.client.destroy();
    link.upstream.destroy();
  }
}

/** A proxy to the host and port of `url`, listening. */
export async function proxyTo(url: string): Promise<TcpProxy> {
  const u = new URL(url);
  const proxy = new TcpProxy({ host: u.hostname, port: Number(u.port || (u.protocol.startsWith("redis") ? 6379 : 5432)) });
  await proxy.listen();
  return proxy;
}
