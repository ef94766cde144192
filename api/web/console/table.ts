import { escapeHtml, html, raw, type SafeHtml } from '../html.ts';

/**
 * Gives each cell of a rendered row its column's name (data-label), which the stylesheet shows
 * beside the cell when a narrow screen stacks the row as a card. Every `<td` in the markup is a
 * cell the view wrote: text from people or apps is escaped, so it never contains one.
 */
function labelCells(row: SafeHtml, headings: readonly string[]): SafeHtml {
  let i = 0;
  return raw(
    row.text.replace(/<td(?=[\s>])/g, () => `<td data-label="${escapeHtml(headings[i++] ?? '')}"`),
  );
}

/**
 * A console list as a table: one heading per column, then one row per item. Each view writes its
 * own rows (their cells and data- attributes); the frame around them is the same on every page,
 * and below ~600 px each row becomes a card of labelled cells.
 */
export function consoleTable<T>(
  headings: readonly string[],
  items: readonly T[],
  row: (item: T) => SafeHtml,
): SafeHtml {
  if (items.length === 0) return html``;
  return html`<div class="table-wrap">
    <table class="stack">
      <thead>
        <tr>
          ${headings.map((heading) => html`<th scope="col">${heading}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${items.map((item) => labelCells(row(item), headings))}
      </tbody>
    </table>
  </div>`;
}
