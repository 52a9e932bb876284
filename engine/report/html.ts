// HTML helpers of the reports: escaping every string that comes from user data (network,
// task and target names, file paths, warnings) and plain tables.

/** Text for HTML element content and attribute values: & < > " ' as character references. */
export const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A table: `head` cells are trusted markup-free labels (escaped anyway), `rows` cells are HTML already escaped by the caller. */
export function table(cls: string, caption: string, head: readonly string[], rows: readonly (readonly string[])[]): string {
  return `<table class="${esc(cls)}"><caption>${esc(caption)}</caption>\n<thead><tr>${head.map((h) => `<th scope="col">${esc(h)}</th>`).join('')}</tr></thead>\n<tbody>\n` +
    `${rows.map((r) => `<tr>${r.map((cell) => `<td>${cell}</td>`).join('')}</tr>`).join('\n')}\n</tbody></table>`;
}
