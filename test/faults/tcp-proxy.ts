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
  /** Where this connection is in an armed cut: 0 nothing yet, 1 `first` sent, 2 `answer` received. */
  stage: 0 | 1 | 2;
}

/** A cut armed by `cutAfter`: once a connection sent `first`, was answered `answer` and sends `then`, its answer is lost. */
interface ArmedCut {
  first: RegExp;
  answer: RegExp;
  then: RegExp;
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
   * process's lease renewals) while the rest passes.
   */
  stallMatching(pattern: RegExp): void {
    this.#stallPattern = pattern;
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
   * Arms a one-shot cut: the first connection that sends something matching `first`, is answered
   * something matching `answer`, then sends something matching `then`, has that last message
   * delivered and is ended (its answer never comes back) with every other connection; new ones
   * are refused until `heal`. Resolves once it fired. (A claim that took a job, cut at its COMMIT.)
   */
  cutAfter(first: RegExp, answer: RegExp, then: RegExp): Promise<void> {
    return new Promise((fired) => (this.#armed = { first, answer, then, fired }));
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
      if (link.stage === 1 && this.#armed?.answer.test(chunk.toString("latin1"))) link.stage = 2;
      if (this.#mode === "stalled" || link.held) link.toClient.push(chunk);
      else client.write(chunk);
    });
  }

  #fromClient(link: Link, chunk: Buffer): void {
    if (!link.held && this.#stallPattern?.test(chunk.toString("latin1"))) link.held = true;
    if (this.#mode === "stalled" || link.held) {
      link.toUpstream.push(chunk);
      return;
    }
    const armed = this.#armed;
    if (armed) {
      const text = chunk.toString("latin1");
      if (armed.first.test(text)) link.stage = 1;
      else if (armed.then.test(text)) {
        if (link.stage === 2) {
          // The message reaches the server whole (end: data first, then FIN); the answer never comes back.
          this.#armed = null;
          this.#mode = "cut";
          this.#links.delete(link);
          link.upstream.end(chunk);
          link.client.destroy();
          for (const other of [...this.#links]) this.#drop(other);
          armed.fired();
          return;
        }
        link.stage = 0;
      }
    }
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
