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

/** Below a paged list: the note shown when it has no rows, and the link to its older rows. */
export type ListEnd = { empty: string; olderHref: string | null; older: string };

/**
 * A console list as a table: one heading per column, then one row per item. Each view writes its
 * own rows (their cells and data- attributes); the frame around them is the same on every page,
 * and below ~600 px each row becomes a card of labelled cells. A paged list passes its `end`.
 */
export function consoleTable<T>(
  headings: readonly string[],
  items: readonly T[],
  row: (item: T) => SafeHtml,
  end?: ListEnd,
): SafeHtml {
  const older = end?.olderHref ? html`<p><a href="${end.olderHref}">${end.older}</a></p>` : '';
  if (items.length === 0) return html`${end ? html`<p>${end.empty}</p>` : ''}${older}`;
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
    </div>
    ${older}`;
}
