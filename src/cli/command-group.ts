import { Command } from "@effect/cli"
import { Array as Arr, HashSet } from "effect"

// biome-ignore lint/suspicious/noExplicitAny: any command, whatever it needs, fails with or parses to.
type AnyCommand = Command.Command<any, any, any, any>

/** The children of each command made by `commandGroup`, in order. */
const groups = new WeakMap<object, ReadonlyArray<AnyCommand>>()

/**
 * A command that only holds others (`gateway`, `gateway admin`, `gateway admin users`), remembered so
 * that `unknownCommand` can name a missing or mistyped word precisely: @effect/cli blames the top-level
 * command for any of them ("Invalid subcommand for gateway - use one of 'serve', …").
 */
export const commandGroup = <const Children extends Arr.NonEmptyReadonlyArray<AnyCommand>>(
  name: string,
  description: string,
  children: Children
) => {
  const command = Command.make(name).pipe(Command.withDescription(description), Command.withSubcommands(children))
  groups.set(command, children)
  return command
}

const nameOf = (command: AnyCommand): string => Arr.fromIterable(HashSet.values(Command.getNames(command)))[0] ?? ""

/**
 * The usage error for `words` (the command line after the program's name) when they stop at a group
 * or name a command none of its children is; undefined when they name a command, or leave it to
 * @effect/cli (no words at all, or an option where a command is due: `--help`, `--version`).
 */
export const unknownCommand = (root: AnyCommand, program: string, words: ReadonlyArray<string>): string | undefined => {
  let children = groups.get(root)
  const path = [program]
  for (const word of words) {
    if (children === undefined || word.startsWith("-")) return undefined
    const next = children.find((child) => nameOf(child) === word)
    if (next === undefined) {
      return `${path.join(" ")}: no command '${printable(word)}'; expected one of: ${children.map(nameOf).join(", ")}`
    }
    path.push(word)
    children = groups.get(next)
  }
  if (children === undefined || path.length === 1) return undefined
  return `${path.join(" ")}: a command is missing; expected one of: ${children.map(nameOf).join(", ")}`
}

/** A word as it can be shown on a terminal: at most 64 characters, control characters escaped. */
const printable = (word: string) =>
  JSON.stringify(word.length > 64 ? `${word.slice(0, 64)}...` : word)
    .slice(1, -1)
    .replace(/\\"/g, '"')
