// How the CLI words an API error: the code stays (scripts match it), and each node error's human
// message, where the server gives one, follows its field and reason.
import { describe, expect, it } from "vitest";
import { FlowgateApiError } from "../../src/client/errors.ts";
import { describeError, ServerUnreachableError } from "../../src/cli/connection.ts";

describe("describeError", () => {
  it("prints each node error's code and, when given, its message; graph-wide errors as the graph's", () => {
    const err = new FlowgateApiError({
      status: 422,
      code: "invalid_workflow",
      message: "The workflow is invalid.",
      details: {
        node_errors: {
          "3": [{ field: "class_type", reason: "unknown_class", message: 'no node class "SaveImg"; did you mean "SaveImage"?' }],
          "2": [{ field: "images", reason: "missing_input" }],
          "": [{ field: "", reason: "no_output_node" }],
        },
      },
    });
    expect(describeError(err).split("\n")).toEqual([
      "invalid_workflow (HTTP 422): The workflow is invalid.",
      "  node 2: images missing_input",
      '  node 3: class_type unknown_class: no node class "SaveImg"; did you mean "SaveImage"?',
      "  graph: (node) no_output_node",
    ]);
  });

  it("names the server that does not answer, with the reason from the socket", () => {
    const cause = new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }) });
    expect(describeError(new ServerUnreachableError("http://127.0.0.1:1", cause))).toBe(
      "no flowgate server answers at http://127.0.0.1:1 (connection refused: nothing listens there)",
    );
  });
});
