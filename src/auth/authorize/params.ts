/**
 * Raw OAuth parameters (query or form). RFC 6749 §3.1: a parameter sent more than once is an error,
 * never "first wins"; absent and empty are the same (RFC 6749 §3.1: empty values are omitted).
 */
export const MAX_PARAMETER_LENGTH = 2048

export type ParameterProblem = "missing" | "duplicated" | "too_long"

export type Single =
  | { readonly _tag: "Value"; readonly value: string }
  | { readonly _tag: "Absent" }
  | { readonly _tag: "Problem"; readonly problem: ParameterProblem; readonly name: string }

export class OAuthParams {
  private constructor(private readonly values: ReadonlyMap<string, ReadonlyArray<string>>) {}

  static fromSearch(search: URLSearchParams): OAuthParams {
    const values = new Map<string, Array<string>>()
    for (const [name, value] of search) {
      if (value === "") continue
      const list = values.get(name)
      if (list === undefined) values.set(name, [value])
      else list.push(value)
    }
    return new OAuthParams(values)
  }

  /** At most one non-empty value of at most `MAX_PARAMETER_LENGTH` characters. */
  single(name: string): Single {
    const list = this.values.get(name) ?? []
    const [value] = list
    if (value === undefined) return { _tag: "Absent" }
    if (list.length > 1) return { _tag: "Problem", problem: "duplicated", name }
    if (value.length > MAX_PARAMETER_LENGTH) return { _tag: "Problem", problem: "too_long", name }
    return { _tag: "Value", value }
  }

  /** Like `single`, but absence is a problem too. */
  required(name: string): Single {
    const found = this.single(name)
    return found._tag === "Absent" ? { _tag: "Problem", problem: "missing", name } : found
  }

  has(name: string): boolean {
    return this.values.has(name)
  }
}

export const describeProblem = (problem: ParameterProblem, name: string): string =>
  problem === "missing"
    ? `The ${name} parameter is required.`
    : problem === "duplicated"
      ? `The ${name} parameter must not be repeated.`
      : `The ${name} parameter is longer than ${MAX_PARAMETER_LENGTH} characters.`
