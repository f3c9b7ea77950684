#!/usr/bin/env node

// `verify-audit` loads only its own code (src/cli/verify-audit-main.ts): it is meant to run in little memory.
if (process.argv[2] === "verify-audit") {
  const { runVerifyAudit } = await import("./cli/verify-audit-main.js")
  runVerifyAudit(process.argv)
} else {
  const { runCli } = await import("./cli/run.js")
  runCli()
}
