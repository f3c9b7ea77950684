import { Command, ValidationError } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { Cause, Effect, Exit, Option } from "effect"
import { version } from "../version.js"
import { cliConsole } from "./console.js"
import { verifyAuditCommand } from "./verify-audit.js"

/**
 * `gateway verify-audit` on its own: src/main.ts sends the command here without loading the rest of the
 * gateway (the MCP SDKs, the store, the servers), whose modules alone hold about 110 MB once loaded,
 * most of the 150 MB a verification of any size is meant to stay under (docs/audit-archive.md).
 * Exit codes as every command's (src/cli/run.ts): 0 verified, 1 refused or unreadable, 2 usage.
 */
export const runVerifyAudit = (argv: ReadonlyArray<string>) => {
  const root = Command.make("gateway").pipe(Command.withSubcommands([verifyAuditCommand]))
  const program = Command.run(root, { name: "gateway", version })(argv).pipe(
    (run) => Effect.consoleWith((console) => Effect.withConsole(run, cliConsole(console))),
    Effect.provide(NodeContext.layer)
  )
  Effect.runPromiseExit(program).then((exit) => {
    let code = 0
    if (Exit.isFailure(exit)) {
      const failure = Cause.failureOption(exit.cause)
      const error = Option.getOrUndefined(failure)
      // @effect/cli prints its own usage errors.
      if (ValidationError.isValidationError(error)) code = 2
      else {
        code = 1
        const text = error instanceof Error ? error.message : Cause.pretty(exit.cause)
        process.stderr.write(`gateway: ${text}\n`)
      }
    }
    process.stderr.write("", () => process.exit(code))
  })
}
