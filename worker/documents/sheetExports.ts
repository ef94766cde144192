import { stringify } from 'csv-stringify/sync';

import type { ParsedSheet, SheetCell } from './types.ts';

function cellText(cell: SheetCell): string {
  if (cell === null) return '';
  if (typeof cell === 'boolean') return cell ? 'TRUE' : 'FALSE';
  return String(cell);
}

/** The first worksheet as RFC 4180 CSV (CRLF, quoted where needed): CSV holds one table. */
export function sheetToCsv(sheet: ParsedSheet): Buffer {
  const rows = (sheet.sheets[0]?.rows ?? []).map((row) => row.map(cellText));
  return Buffer.from(stringify(rows, { record_delimiter: 'windows' }), 'utf8');
}

// Excel refuses sheet names over 31 characters or with any of : \ / ? * [ ].
function sheetName(name: string): string {
  return (
    name
      .replace(/[:\\/?*[\]]/g, ' ')
      .trim()
      .slice(0, 31) || 'Sheet1'
  );
}

/** Every worksheet as an xlsx workbook. */
export async function sheetToXlsx(sheet: ParsedSheet): Promise<Buffer> {
  // Loaded when a sheet is exported, as parseSheet.ts loads it: a large module most workers never need.
  const { default: ExcelJS } = await import('exceljs');
  const workbook = new ExcelJS.Workbook();
  const used = new Set<string>();
  for (const [i, { name, rows }] of sheet.sheets.entries()) {
    let unique = sheetName(name);
    if (used.has(unique.toLowerCase())) unique = `${unique.slice(0, 27)} (${i + 1})`;
    used.add(unique.toLowerCase());
    workbook.addWorksheet(unique).addRows(rows);
  }
  return Buffer.from(await workbook.xlsx.writeBuffer());
}
