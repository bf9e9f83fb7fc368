// Server-sent events from a fetch body, parsed by eventsource-parser.
import { createParser, type EventSourceMessage } from "eventsource-parser";

/** Yields each event of an SSE body until it ends; comments (keep-alives) call `onActivity` only. */
export async function* readSse(body: ReadableStream<Uint8Array>, onActivity: () => void = () => undefined): AsyncGenerator<EventSourceMessage> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({
    onEvent: (event) => queue.push(event),
    onComment: () => onActivity(),
  });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      onActivity();
      parser.feed(decoder.decode(value, { stream: true }));
      while (queue.length > 0) yield queue.shift()!;
    }
    parser.feed(decoder.decode());
    while (queue.length > 0) yield queue.shift()!;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
