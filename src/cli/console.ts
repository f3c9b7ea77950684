import type { Console } from "effect"

const ESC = String.fromCharCode(27)
/** Removes SGR sequences (ESC [ … m and the like): what @effect/cli colours with. */
const withoutEscapes = (text: string) => {
  let out = ""
  let at = 0
  for (let found = text.indexOf(ESC); found >= 0; found = text.indexOf(ESC, at)) {
    out += text.slice(at, found)
    const sequence = /^\[[0-9;]*[A-Za-z]/.exec(text.slice(found + 1, found + 32))
    at = found + 1 + (sequence?.[0].length ?? 0)
  }
  return out + text.slice(at)
}
const plain = (args: ReadonlyArray<unknown>) => args.map((arg) => (typeof arg === "string" ? withoutEscapes(arg) : arg))

/**
 * The help's list of commands with each nested command's path as typed: @effect/cli 0.77 repeats the
 * outer group's name for commands two levels down ("- admin admin users list").
 */
const withoutRepeatedGroup = (args: ReadonlyArray<unknown>) =>
  args.map((arg) =>
    typeof arg === "string"
      ? arg.replace(
          /^( *- )(\S+) \2 (.*?)( {2,})/gm,
          // The description column stays where the library put it: the name's width goes to the padding.
          (_, dash: string, group: string, rest: string, padding: string) =>
            `${dash}${group} ${rest}${padding}${" ".repeat(group.length + 1)}`
        )
      : arg
  )

/** Where to look when the command line was refused (the only errors @effect/cli writes to the console). */
export const usageHint = "(gateway --help lists every command with its options)"

/** A usage error as every other error of the command reads: `gateway: <what>`, then where to look. */
const asUsageError = (args: ReadonlyArray<unknown>) => {
  const [first, ...rest] = args
  return typeof first === "string" ? [`gateway: ${first.trimEnd()}\n${usageHint}`, ...rest] : args
}

/**
 * The console every command runs with: colour codes left out of what goes to a pipe or a file (help
 * and usage errors are coloured by @effect/cli), so a script reading `gateway … --help` or an error
 * gets plain text while a terminal still gets colour; usage errors prefixed like every other error.
 */
export const cliConsole = (console: Console.Console): Console.Console => {
  const out = process.stdout.isTTY === true
  const err = process.stderr.isTTY === true
  return {
    ...console,
    log: (...args) => console.log(...withoutRepeatedGroup(out ? args : plain(args))),
    error: (...args) => console.error(...asUsageError(err ? args : plain(args))),
    unsafe: {
      ...console.unsafe,
      log: (...args) => console.unsafe.log(...withoutRepeatedGroup(out ? args : plain(args))),
      error: (...args) => console.unsafe.error(...asUsageError(err ? args : plain(args)))
    }
  }
}
