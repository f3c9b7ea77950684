import { type CallCheck, deny } from "./check.js"

/** The tool is visible to this caller: its backend is open and an access entry names it. */
export const checkVisible: CallCheck = ({ view, tool }) => {
  const entries = view.entriesFor(tool)
  return entries.length === 0 || !view.seesTool(tool) ? deny("not_visible") : entries
}
