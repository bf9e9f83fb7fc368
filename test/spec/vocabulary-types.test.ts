// Type tests: the code's vocabulary is the spec's generated unions, and a word outside them does
// not compile. `npm run typecheck` checks this file (an unused @ts-expect-error fails there, so a
// union that widens to string fails too); the assertions below only run the same checks as values.
import { describe, expect, expectTypeOf, it } from "vitest";
import type { HostedExceptionType } from "../../generated/asyncapi-types.ts";
import { JOB_ERROR_CODES, JOB_STATUSES, type TERMINAL_JOB_STATUSES } from "../../generated/enums.ts";
import type { ProgressSnapshot } from "../../src/cli/progress-view.ts";
import type { ErrorCode } from "../../src/domain/errors.ts";
import { type JobErrorCode, WORKER_LOST } from "../../src/domain/failures.ts";
import type { RunFailure } from "../../src/jobs/engine-port.ts";
import { exceptionType } from "../../src/server/hosted/status-map.ts";
import type { RUN_STATUSES } from "../../src/store/sql-fragments.ts";
import type { JobStatus, LIVE_STATUSES, TERMINAL_STATUSES } from "../../src/store/index.ts";

describe("the vocabulary is the spec's", () => {
  it("RunFailure.code is a known JobError code: a typo does not compile", () => {
    expectTypeOf<RunFailure["code"]>().toEqualTypeOf<(typeof JOB_ERROR_CODES)[number]>();
    expectTypeOf<RunFailure["code"]>().toEqualTypeOf<JobErrorCode>();
    const failure: RunFailure = { code: "insufficient_storage", message: "The disk is full." };
    // @ts-expect-error a misspelt code
    const typo: RunFailure = { code: "insufficent_storage", message: "The disk is full." };
    expect(JOB_ERROR_CODES).toContain(failure.code);
    expect(JOB_ERROR_CODES).not.toContain(typo.code);
    expect(JOB_ERROR_CODES).toContain(WORKER_LOST.code);
  });

  it("job statuses are the spec's seven, and the store's subsets are of them", () => {
    expectTypeOf<JobStatus>().toEqualTypeOf<(typeof JOB_STATUSES)[number]>();
    expectTypeOf<(typeof TERMINAL_STATUSES)[number]>().toEqualTypeOf<(typeof TERMINAL_JOB_STATUSES)[number]>();
    expectTypeOf<(typeof LIVE_STATUSES)[number]>().toEqualTypeOf<"queued" | "running" | "canceling">();
    expectTypeOf<(typeof RUN_STATUSES)[number]>().toExtend<JobStatus>();
    // @ts-expect-error not a status
    const status: JobStatus = "done";
    expect(JOB_STATUSES).not.toContain(status);
  });

  it("the CLI's status is a JobStatus", () => {
    expectTypeOf<ProgressSnapshot["status"]>().toEqualTypeOf<JobStatus>();
    // @ts-expect-error the CLI draws only the spec's statuses
    const snapshot: Pick<ProgressSnapshot, "status"> = { status: "finished" };
    expect(JOB_STATUSES).not.toContain(snapshot.status);
  });

  it("an error code is the spec's ErrorCode; a hosted exception type one of the seed's six", () => {
    // @ts-expect-error not an error code of the contract
    const code: ErrorCode = "internal_error";
    expect(code).toBe("internal_error");
    expectTypeOf(exceptionType).returns.toEqualTypeOf<HostedExceptionType>();
    expect(exceptionType("missing_model")).toBe("ModelDownloadError");
    expect(exceptionType("out_of_memory")).toBe("OOMError");
    expect(exceptionType("worker_lost")).toBe("ValidationError");
  });
});
