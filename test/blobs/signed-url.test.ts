import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SIGNING_KEY_FILE, UrlSigner, loadOrCreateSigningKey } from "../../src/blobs/index.ts";

const KEY = Buffer.alloc(32, 7);
const PATH = "/api/v2/assets/0190a4c2-1111-7000-8000-000000000001/content";
const NOW = 1_800_000_000_000;
const HOUR = 3_600_000;

describe("UrlSigner", () => {
  const signer = new UrlSigner(KEY);

  it("signs a path with an expiry in seconds and a base64url HMAC", () => {
    const signed = signer.sign(PATH, NOW + HOUR + 999);
    expect(signed.query).toMatch(/^expires=\d+&signature=[A-Za-z0-9_-]{43}$/);
    expect(signed.url).toBe(`${PATH}?${signed.query}`);
    expect(signed.expires_at).toBe(NOW + HOUR); // rounded down to the second
    expect(new URLSearchParams(signed.query).get("expires")).toBe(String((NOW + HOUR) / 1000));
  });

  it("accepts a genuine link in every query form until it expires", () => {
    const { query, expires_at } = signer.sign(PATH, NOW + HOUR);
    expect(signer.verify(PATH, query, NOW)).toBe("ok");
    expect(signer.verify(PATH, `?${query}`, NOW)).toBe("ok");
    expect(signer.verify(PATH, new URLSearchParams(query), NOW)).toBe("ok");
    expect(signer.verify(PATH, Object.fromEntries(new URLSearchParams(query)), NOW)).toBe("ok");
    expect(signer.verify(PATH, query, expires_at - 1)).toBe("ok");
    expect(signer.verify(PATH, query, expires_at)).toBe("expired");
    expect(signer.verify(PATH, query, expires_at + HOUR)).toBe("expired");
  });

  it("refuses a link moved to another path", () => {
    const { query } = signer.sign(PATH, NOW + HOUR);
    expect(signer.verify(PATH.replace("0001", "0002"), query, NOW)).toBe("invalid");
    expect(signer.verify(`${PATH}/`, query, NOW)).toBe("invalid");
    expect(signer.verify(`${PATH}?x=1`, query, NOW)).toBe("invalid");
  });

  it("refuses a tampered signature or expiry, even when expired", () => {
    const { query } = signer.sign(PATH, NOW + HOUR);
    const params = new URLSearchParams(query);
    const signature = params.get("signature")!;
    const flipped = (signature[0] === "A" ? "B" : "A") + signature.slice(1);
    const tamperedSig = new URLSearchParams({ expires: params.get("expires")!, signature: flipped });
    expect(signer.verify(PATH, tamperedSig, NOW)).toBe("invalid");
    expect(signer.verify(PATH, tamperedSig, NOW + 2 * HOUR)).toBe("invalid");
    const extended = new URLSearchParams({ expires: String(Number(params.get("expires")) + 3600), signature });
    expect(signer.verify(PATH, extended, NOW)).toBe("invalid");
  });

  it("refuses missing, repeated or malformed parameters", () => {
    const { query } = signer.sign(PATH, NOW + HOUR);
    const params = new URLSearchParams(query);
    const expires = params.get("expires")!;
    const signature = params.get("signature")!;
    for (const bad of [
      "",
      `expires=${expires}`,
      `signature=${signature}`,
      `${query}&expires=${expires}`,
      `${query}&signature=${signature}`,
      `expires=${expires}.0&signature=${signature}`,
      `expires=${expires}&signature=${signature}=`,
      `expires=${expires}&signature=${signature.slice(1)}`,
    ]) {
      expect(signer.verify(PATH, bad, NOW)).toBe("invalid");
    }
    expect(signer.verify(PATH, { expires: [expires, expires], signature }, NOW)).toBe("invalid");
  });

  it("refuses a link signed with another key", () => {
    const other = new UrlSigner(Buffer.alloc(32, 8));
    expect(signer.verify(PATH, other.sign(PATH, NOW + HOUR).query, NOW)).toBe("invalid");
    const fromString = new UrlSigner("a configured secret of some length");
    expect(fromString.verify(PATH, fromString.sign(PATH, NOW + HOUR).query, NOW)).toBe("ok");
  });

  it("refuses weak keys and paths it cannot sign unambiguously", () => {
    expect(() => new UrlSigner("short")).toThrow(RangeError);
    expect(() => signer.sign("relative/path", NOW)).toThrow(TypeError);
    expect(() => signer.sign(`${PATH}?a=b`, NOW)).toThrow(TypeError);
    expect(() => signer.sign(`${PATH}#frag`, NOW)).toThrow(TypeError);
  });
});

describe("loadOrCreateSigningKey", () => {
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "flowgate-key-"));
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it("generates a 32-byte key once, in a 0600 file, and returns it afterwards", async () => {
    const key = await loadOrCreateSigningKey(dataDir);
    expect(key).toHaveLength(32);
    const file = join(dataDir, SIGNING_KEY_FILE);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await readFile(file, "utf8")).trim()).toBe(key.toString("hex"));
    expect((await loadOrCreateSigningKey(dataDir)).equals(key)).toBe(true);
    expect(await readdir(dataDir)).toEqual([SIGNING_KEY_FILE]);
  });

  it("gives every concurrent first caller the same key", async () => {
    const keys = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateSigningKey(dataDir)));
    for (const key of keys) expect(key.equals(keys[0]!)).toBe(true);
    expect(await readdir(dataDir)).toEqual([SIGNING_KEY_FILE]);
  });

  it("creates a missing data dir, tightens loosened permissions and refuses a damaged file", async () => {
    const nested = join(dataDir, "a", "b");
    await loadOrCreateSigningKey(nested);
    const file = join(nested, SIGNING_KEY_FILE);
    await chmod(file, 0o644);
    await loadOrCreateSigningKey(nested);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    await writeFile(file, "not a key\n");
    await expect(loadOrCreateSigningKey(nested)).rejects.toThrow(/64-hex-digit/);
  });
});
