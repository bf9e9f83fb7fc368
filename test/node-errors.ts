// Node errors without their sentences for people: tests that pin the codes compare these.

type NodeErrors = Record<string, Array<{ field: string; reason: string; message?: string }>>;

/** `node_errors` with only `field` and `reason` per error (every error also carries a `message`). */
export function reasons(errors: NodeErrors): Record<string, Array<{ field: string; reason: string }>> {
  return Object.fromEntries(Object.entries(errors).map(([id, list]) => [id, list.map(({ field, reason }) => ({ field, reason }))]));
}
