/**
 * Just enough Markdown for the docs check (test/docs/links.test.ts): where the code is (fenced blocks
 * and inline code spans), where the links point, and the anchors GitHub gives headings.
 */

export interface Markdown {
  /** Text outside fenced code blocks, with each fenced block replaced by an empty line. */
  readonly prose: string
  /** Every fenced block's content and every inline code span (whitespace runs made one space). */
  readonly code: ReadonlyArray<string>
}

const fence = /^ {0,3}(`{3,}|~{3,})/

export const parseMarkdown = (text: string): Markdown => {
  const prose: Array<string> = []
  const code: Array<string> = []
  let open: string | undefined
  let block: Array<string> = []
  for (const line of text.split("\n")) {
    const marker = fence.exec(line)?.[1]
    if (open === undefined && marker !== undefined) {
      open = marker
      block = []
      prose.push("")
    } else if (open !== undefined && marker !== undefined && marker[0] === open[0] && marker.length >= open.length) {
      open = undefined
      code.push(block.join("\n"))
    } else if (open !== undefined) {
      block.push(line)
    } else {
      prose.push(line)
    }
  }
  if (open !== undefined) code.push(block.join("\n"))
  const outside = prose.join("\n")
  // A code span may run over a line break inside its paragraph.
  for (const span of outside.matchAll(codeSpan)) code.push(span[2]!.replace(/\s+/g, " ").trim())
  return { prose: outside, code }
}

const codeSpan = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g

/** Targets of inline links and images, and of reference definitions, outside code. */
export const linkTargets = (markdown: Markdown): Array<string> => {
  const text = markdown.prose.replace(codeSpan, "code")
  const inline = [...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!)
  const references = [...text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!)
  return [...inline, ...references]
}

/** The anchors of a document's headings as GitHub makes them (github-slugger), duplicates numbered. */
export const headingAnchors = (markdown: Markdown): Set<string> => {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const match of markdown.prose.matchAll(/^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/gm)) {
    const slug = slugOf(headingText(match[1]!))
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    anchors.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return anchors
}

/** What a heading renders as text: no code ticks, link targets, emphasis stars or HTML tags. */
const headingText = (heading: string) =>
  heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/`/g, "")
    .replace(/<[^>]+>/g, "")
    .replace(/\*+/g, "")

const slugOf = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-")
