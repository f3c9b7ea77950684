import { type RunResult, runGatewayCommand } from "./gateway-process.js"

export type CommandResult = RunResult

/** Runs `gateway <args>` with `stdin` as standard input (empty by default) and only the given environment. */
export const runGateway = (
  args: ReadonlyArray<string>,
  options: { readonly env: Record<string, string>; readonly stdin?: string; readonly cwd?: string }
): Promise<CommandResult> => runGatewayCommand(args, { ...options, stdin: options.stdin ?? "", timeoutMs: 30_000 })
