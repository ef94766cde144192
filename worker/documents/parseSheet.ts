import { parse } from 'csv-parse/sync';
import type ExcelJS from 'exceljs';

import { documentLimits, DocumentRejected,documentText } from './limits.ts';
import type { ParsedSheet, SheetCell } from './types.ts';
import { openZip } from './zipReader.ts';

function checkCells(rows: number, cells: number): void {
  if (rows > documentLimits.maxSheetRows) throw new DocumentRejected('too many rows');
  if (cells > documentLimits.maxSheetCells) throw new DocumentRejected('too many cells');
}

/**
 * CSV per RFC 4180 (quoted fields, embedded newlines, a leading BOM tolerated); rows may differ in
 * length. Values stay text: CSV has no types.
 * @throws DocumentRejected when the text is not UTF-8 or not valid CSV, or exceeds the bounds.
 */
export function parseCsv(data: Buffer, name: string): ParsedSheet {
  const text = documentText(data);
  let rows: string[][];
  try {
    rows = parse(text, {
      bom: true,
      relax_column_count: true,
      // One past the bound, so an oversized sheet is noticed without reading all of it.
      to: documentLimits.maxSheetRows + 1,
      max_record_size: 1024 * 1024,
    }) as string[][];
  } catch (error) {
    throw new DocumentRejected(`not valid CSV: ${(error as Error).message}`);
  }
  checkCells(
    rows.length,
    rows.reduce((n, r) => n + r.length, 0),
  );
  return { kind: 'sheet', sheets: [{ name, rows }] };
}

/** A cell as plain data: formulas by their cached result, rich text and links by their text. */
function cellValue(value: ExcelJS.CellValue): SheetCell {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (value instanceof Date) return value.toISOString();
  const v = value as unknown as Record<string, unknown>;
  if (Array.isArray(v.richText)) return (v.richText as { text: string }[]).map((r) => r.text).join('');
  if ('formula' in v || 'sharedFormula' in v) return cellValue((v.result ?? null) as ExcelJS.CellValue);
  if ('hyperlink' in v) return cellValue((v.text ?? null) as ExcelJS.CellValue);
  if (typeof v.error === 'string') return v.error;
  return null;
}

/**
 * Every worksheet's cells as values. exceljs inflates every part of the workbook itself, so the
 * zip is judged first: its directory against maxWorkbookBytes, then each entry inflated (and
 * dropped) to prove it holds no more than it declares. exceljs is loaded only then.
 * @throws DocumentRejected when the bytes are not an xlsx workbook or exceed the bounds.
 */
export async function parseXlsx(data: Buffer): Promise<ParsedSheet> {
  const zip = openZip(data, { maxDeclaredBytes: documentLimits.maxWorkbookBytes });
  if (!zip.has('xl/workbook.xml')) throw new DocumentRejected('no workbook part');
  await zip.verifyAll();
  const { default: Excel } = await import('exceljs');
  const workbook = new Excel.Workbook();
  try {
    await workbook.xlsx.load(data as unknown as ExcelJS.Buffer);
  } catch (error) {
    throw new DocumentRejected(`not a readable workbook: ${(error as Error).message}`);
  }
  const sheets: ParsedSheet['sheets'] = [];
  let rowsSeen = 0;
  let cellsSeen = 0;
  for (const worksheet of workbook.worksheets) {
    checkCells(rowsSeen + worksheet.rowCount, cellsSeen + worksheet.rowCount * worksheet.columnCount);
    const rows: SheetCell[][] = [];
    worksheet.eachRow({ includeEmpty: true }, (row) => {
      const values: SheetCell[] = [];
      for (let c = 1; c <= row.cellCount; c++) values.push(cellValue(row.getCell(c).value));
      rows.push(values);
    });
    rowsSeen += rows.length;
    cellsSeen += rows.reduce((n, r) => n + r.length, 0);
    sheets.push({ name: worksheet.name, rows });
  }
  if (sheets.length === 0) throw new DocumentRejected('no worksheet');
  return { kind: 'sheet', sheets };
}
