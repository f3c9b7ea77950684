/** How much of a caller-supplied string an error message repeats. */
export const MAX_ECHO_CHARACTERS = 100

/**
 * A caller's string as an error message may quote it: at most the first 100 characters, then "…". A
 * name is echoed so a person can see what was asked for; a 4 MiB name must not make a 4 MB answer.
 */
export const shortText = (text: string): string =>
  text.length > MAX_ECHO_CHARACTERS ? `${text.slice(0, MAX_ECHO_CHARACTERS)}…` : text
