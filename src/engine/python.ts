// Python's str()/repr()/int()/float()/bool() for JSON values, so that coercions and
// error texts read exactly as ComfyUI's (which are Python f-strings over these values).

/** repr() of a float: shortest round-trip digits, ".0" on integers, exponent past 1e16. */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const exp = Number(x.toExponential().split("e")[1]);
  if (exp < -4 || exp >= 16) {
    const [mantissa, e] = x.toExponential().split("e") as [string, string];
    const sign = e.startsWith("-") ? "-" : "+";
    const digits = e.replace(/^[+-]/, "").padStart(2, "0");
    return `${mantissa}e${sign}${digits}`;
  }
  const s = String(x);
  return Number.isInteger(x) ? `${s}.0` : s;
}

/** repr() of a JSON value (numbers: ints when integral, else floats). */
export function pyRepr(v: unknown): string {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : pyFloatRepr(v);
  if (typeof v === "bigint") return v.toString();
  if (JSON.isRawJSON(v)) return v.rawJSON; // an exact integer beyond 2^53
  if (typeof v === "string") return pyStringRepr(v);
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(", ")}]`;
  if (typeof v === "object") {
    return `{${Object.entries(v as Record<string, unknown>)
      .map(([k, val]) => `${pyStringRepr(k)}: ${pyRepr(val)}`)
      .join(", ")}}`;
  }
  return String(v);
}

/** str() of a JSON value. */
export function pyStr(v: unknown): string {
  return typeof v === "string" ? v : pyRepr(v);
}

function pyStringRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = "";
  for (const ch of s) {
    if (ch === "\\") out += "\\\\";
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch < " " || ch === "\x7f") out += `\\x${ch.charCodeAt(0).toString(16).padStart(2, "0")}`;
    else out += ch;
  }
  return quote + out + quote;
}

/** Python's name of a JSON value's type, for TypeError texts. */
export function pyTypeName(v: unknown): string {
  if (v === null || v === undefined) return "NoneType";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "number") return Number.isInteger(v) ? "int" : "float";
  if (typeof v === "string") return "str";
  if (Array.isArray(v)) return "list";
  return "dict";
}

/** The outcome of a Python conversion: a value, or the exception text Python would give. */
export type Conversion<T> = { ok: true; value: T } | { ok: false; error: string };

/** int(v): truncates floats, parses decimal strings (with _ separators), True is 1. */
export function pyInt(v: unknown): Conversion<number> {
  if (typeof v === "boolean") return { ok: true, value: v ? 1 : 0 };
  if (typeof v === "number") {
    if (Number.isNaN(v)) return { ok: false, error: "cannot convert float NaN to integer" };
    if (!Number.isFinite(v)) return { ok: false, error: "cannot convert float infinity to integer" };
    return { ok: true, value: Math.trunc(v) };
  }
  if (typeof v === "string") {
    const s = v.trim();
    if (/^[+-]?\d(?:_?\d)*$/.test(s)) return { ok: true, value: Number(s.replace(/_/g, "")) };
    return { ok: false, error: `invalid literal for int() with base 10: ${pyStringRepr(v)}` };
  }
  return { ok: false, error: `int() argument must be a string, a bytes-like object or a real number, not '${pyTypeName(v)}'` };
}

const FLOAT_LITERAL = /^[+-]?(?:(?:\d(?:_?\d)*)?(?:\.(?:\d(?:_?\d)*)?)?(?:[eE][+-]?\d(?:_?\d)*)?)$/;

/** float(v): parses Python float literals including inf and nan. */
export function pyFloat(v: unknown): Conversion<number> {
  if (typeof v === "boolean") return { ok: true, value: v ? 1 : 0 };
  if (typeof v === "number") return { ok: true, value: v };
  if (typeof v === "string") {
    const s = v.trim();
    const special = /^([+-]?)(inf|infinity|nan)$/i.exec(s);
    if (special) {
      const sign = special[1] === "-" ? -1 : 1;
      return { ok: true, value: special[2]!.toLowerCase() === "nan" ? NaN : sign * Infinity };
    }
    if (FLOAT_LITERAL.test(s) && /\d/.test(s) && !/^[+-]?[eE]/.test(s) && !/^[+-]?\.[eE]/.test(s)) {
      return { ok: true, value: Number(s.replace(/_/g, "")) };
    }
    return { ok: false, error: `could not convert string to float: ${pyStringRepr(v)}` };
  }
  return { ok: false, error: `float() argument must be a string or a real number, not '${pyTypeName(v)}'` };
}

/** bool(v): Python truthiness (so the string "false" is True, as in ComfyUI). */
export function pyBool(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === "") return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === "object") return Object.keys(v).length > 0;
  return true; // nonzero numbers (NaN included) and non-empty strings
}
