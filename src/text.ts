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

/** A character as Unicode names it in text: `U+034F`, `U+1D5BA`. */
export const codePointLabel = (char: string): string =>
  `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`

/**
 * The characters drawn as nothing that no name may hold and every review page shows escaped, as the
 * body of a regular expression class (`u` flag): format characters (Cf: zero-width spaces and joiners,
 * bidi embeddings, overrides and isolates, the BOM, soft hyphen), the other default-ignorable code points
 * (U+034F, U+115F, U+3164, U+FE00-FE0F, U+E0100-E01EF…), line and paragraph separators, lone surrogates,
 * and three symbols Unicode does not count as invisible though they draw as nothing or as a gap: U+2800
 * (braille pattern blank), U+1D159 (musical null notehead), U+FFFC (object replacement).
 */
export const INVISIBLE_CLASS = String.raw`\p{Cf}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}\p{Cs}\u2800\u{1D159}\uFFFC`
