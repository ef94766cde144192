import { html, type SafeHtml } from '../html.ts';

/**
 * A console list as a table: one heading per column, then one row per item. Each view writes its
 * own rows (their cells and data- attributes); the frame around them is the same on every page.
 */
export function consoleTable<T>(
  headings: readonly string[],
  items: readonly T[],
  row: (item: T) => SafeHtml,
): SafeHtml {
  return html`<table>
    <thead>
      <tr>
        ${headings.map((heading) => html`<th>${heading}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${items.map(row)}
    </tbody>
  </table>`;
}
