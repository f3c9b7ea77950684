import { Command, ValidationError } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { ConfigInvalid } from "../config/service.js"
import type { ExtraRoutes } from "../runtime/build-generation.js"
import { loggerLayer } from "../runtime/logger.js"
import { version } from "../version.js"
import { adminCommand } from "./admin/command.js"
import { AdminCommandFailed } from "./admin/failure.js"
import { adminLoginCommand } from "./admin-login.js"
import { commandGroup, unknownCommand } from "./command-group.js"
import { connectCommand } from "./connect.js"
import { cliConsole, usageHint } from "./console.js"
import { devTokenCommand } from "./dev-token.js"
import { initAdminCommand } from "./init-admin.js"
import { serveCommand } from "./serve.js"
import { validateCommand } from "./validate.js"
import { verifyAuditCommand } from "./verify-audit.js"

export { version }

/**
 * Exit codes (README, docs/operations.md): 0 success or clean shutdown; 1 the gateway could not
 * start or failed while running; 2 invalid configuration or command-line usage; `gateway admin`
 * commands add their own (src/cli/admin/failure.ts).
 */
export const exitCodeOf = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit)) return 0
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (error instanceof ConfigInvalid || ValidationError.isValidationError(error)) return 2
    if (error instanceof AdminCommandFailed) return error.exitCode
  }
  return 1
}

const describe = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    // @effect/cli prints its own usage errors.
    if (ValidationError.isValidationError(error)) return ""
    if (error instanceof ConfigInvalid) return `gateway: invalid configuration\n${error.message}`
    if (error instanceof Error) return `gateway: ${error.message}`
    return `gateway: ${String(error)}`
  }
  return `gateway: unexpected failure\n${Cause.pretty(cause)}`
}

export const rootCommand = (extraRoutes?: ExtraRoutes) =>
  commandGroup("gateway", "Identity-aware gateway in front of MCP tool servers", [
    serveCommand(extraRoutes),
    validateCommand,
    initAdminCommand,
    adminLoginCommand,
    adminCommand,
    devTokenCommand,
    connectCommand,
    verifyAuditCommand
  ])

/**
 * Runs the `gateway` executable. Startup failures are plain text on stderr (they are read by a
 * person at a terminal or in `docker logs`); logs while serving are JSON lines.
 */
export const runCli = (extraRoutes?: ExtraRoutes, argv: ReadonlyArray<string> = process.argv) => {
  const root = rootCommand(extraRoutes)
  const missing = unknownCommand(root, "gateway", argv.slice(2))
  if (missing !== undefined) {
    process.stderr.write(`${missing}\n${usageHint}\n`, () => process.exit(2))
    return
  }
  // Every command logs JSON lines to stderr (`serve` sets its own level): stdout stays the command's output.
  const program = Command.run(root, { name: "gateway", version })(argv).pipe(
    (run) => Effect.consoleWith((console) => Effect.withConsole(run, cliConsole(console))),
    Effect.provide(Layer.mergeAll(NodeContext.layer, loggerLayer("info")))
  )
  Effect.runPromiseExit(program).then((exit) => {
    if (Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)) {
      const text = describe(exit.cause)
      if (text !== "") process.stderr.write(`${text}\n`)
    }
    const code = exitCodeOf(exit)
    // Connections and timers are closed by then; exiting here only guards against a stray handle.
    process.stderr.write("", () => process.exit(code))
  })
}
