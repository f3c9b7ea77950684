/**
 * Whether `text` holds a C0 or C1 control character, or DEL: line breaks, terminal escapes and U+0000
 * (which PostgreSQL cannot store in text) have no place in a name or an identifier.
 */
export const hasControlCharacter = (text: string): boolean => {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true
  }
  return false
}
