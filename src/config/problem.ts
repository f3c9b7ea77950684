import type { ConfigProblem } from "./service.js"

/** A problem found before its line is known; the loader fills the line from the path. */
export const problem = (path: string, message: string): ConfigProblem => ({ path, line: undefined, message })

/** `<file>:<line>: <path>: <message>`, the shape editors and CI annotations understand. */
export const formatProblem = (file: string, { path, line, message }: ConfigProblem): string =>
  `${file}${line === undefined ? "" : `:${line}`}: ${path === "" ? "" : `${path}: `}${message}`
