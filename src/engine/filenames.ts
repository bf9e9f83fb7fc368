// ComfyUI-style output file names: "<prefix>_00001_.png", with the prefix's directory part
// as the subfolder. Counters start at 1 for each run (flowgate has no shared output folder).
import { NodeInputError } from "./errors.ts";
import type { NodeFile } from "./node-spec.ts";

/** Where a file goes: its folder, subfolder and file name. */
export interface FileName {
  name: string;
  subfolder: string;
}

/** Replaces ComfyUI's %width%, %height% and date variables (UTC) in a prefix. */
export function expandPrefixVariables(prefix: string, file: Pick<NodeFile, "width" | "height">, now: Date): string {
  if (!prefix.includes("%")) return prefix;
  const two = (n: number) => String(n).padStart(2, "0");
  const vars: Record<string, string> = {
    "%year%": String(now.getUTCFullYear()),
    "%month%": two(now.getUTCMonth() + 1),
    "%day%": two(now.getUTCDate()),
    "%hour%": two(now.getUTCHours()),
    "%minute%": two(now.getUTCMinutes()),
    "%second%": two(now.getUTCSeconds()),
  };
  if (file.width !== undefined) vars["%width%"] = String(file.width);
  if (file.height !== undefined) vars["%height%"] = String(file.height);
  let out = prefix;
  for (const [k, v] of Object.entries(vars)) out = out.split(k).join(v);
  return out;
}

/** Splits a prefix into subfolder and file name, refusing anything that leaves the output folder. */
export function splitPrefix(prefix: string): { subfolder: string; filename: string } {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\\]/.test(prefix)) throw new NodeInputError("filename_prefix contains characters that are not allowed");
  if (prefix.startsWith("/")) throw new NodeInputError("Saving outside the output folder is not allowed.");
  const parts: string[] = [];
  for (const part of prefix.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (parts.length === 0) throw new NodeInputError("Saving outside the output folder is not allowed.");
      parts.pop();
      continue;
    }
    parts.push(part);
  }
  // A trailing slash names a folder: the file name is then empty, as with os.path.basename.
  const filename = prefix.endsWith("/") ? "" : (parts.pop() ?? "");
  return { subfolder: parts.join("/"), filename };
}

/** Why a prefix would be refused when its files are named (leaving the output folder, NUL, a backslash), or null. */
export function prefixProblem(prefix: string): string | null {
  try {
    splitPrefix(prefix);
    return null;
  } catch (err) {
    if (err instanceof NodeInputError) return err.message;
    throw err;
  }
}

/** Hands out ComfyUI-style names, counting per folder and prefix within one run. */
export class FileNamer {
  private readonly counters = new Map<string, number>();

  private readonly now: () => Date;

  constructor(now: () => Date = () => new Date()) {
    this.now = now;
  }

  /** The name for the next file of a node. */
  allocate(file: NodeFile): FileName {
    const expanded = expandPrefixVariables(file.prefix, file, this.now())
      .split("%batch_num%")
      .join(String(file.batchIndex ?? 0));
    const { subfolder, filename } = splitPrefix(expanded);
    const key = `${file.folder}\u0000${subfolder}\u0000${filename}`;
    const counter = (this.counters.get(key) ?? 0) + 1;
    this.counters.set(key, counter);
    return { name: `${filename}_${String(counter).padStart(5, "0")}_.${file.extension}`, subfolder };
  }
}
