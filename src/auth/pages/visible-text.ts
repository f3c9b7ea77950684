/**
 * Characters that are invisible or reorder what a reviewer reads (bidirectional controls, zero-width
 * and other format characters, separators, private-use and unassigned code points), shown as `\uXXXX`
 * so a review page shows exactly what will be used. Newlines are the JSON's own layout.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}]/gu

export const visibleText = (text: string) =>
  text.replace(HIDDEN, (char) =>
    char === "\n" ? char : [...char].map((one) => `\\u${one.codePointAt(0)!.toString(16).padStart(4, "0")}`).join("")
  )
