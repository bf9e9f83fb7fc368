// The conformance suite's programmatic entry: runConformance(options) -> Report, the report
// formatters, the CLI's main, and the rule list.
export { runConformance, ALL_CHECKS } from "./runner.ts";
export { formatConsole, formatProgress, toJson, toJUnit } from "./machinery/report.ts";
export { toHtml } from "./machinery/html-report.ts";
export { main, parseCli, USAGE } from "./cli.ts";
export { RULES, GROUPS, ruleById } from "./rules.ts";
export type { ConformanceOptions, Report, CheckResult, FailureDetail, GroupSummary, Surface } from "./types.ts";
export type { Graph } from "./checks/support/workflows.ts";
