import { XMLParser } from 'fast-xml-parser';

import { DocumentRejected } from './limits.ts';

// Elements that can repeat; the parser makes them arrays even when one is present.
const repeated = new Set([
  'p:sldId',
  'Relationship',
  'p:sp',
  'p:pic',
  'p:grpSp',
  'p:graphicFrame',
  'a:p',
  'a:r',
  'a:fld',
  'a:tr',
  'a:tc',
]);

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  // Text runs keep their exact characters: no number conversion, no trimming of a run of spaces.
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  isArray: (name) => repeated.has(name),
});

export type XmlNode = Record<string, unknown>;

/**
 * Parses one OOXML part. Parts never declare a DTD, so one that does is refused rather than
 * given a chance at entity expansion.
 * @throws DocumentRejected when the part is not well-formed XML or declares a DTD.
 */
export function parseXml(text: string): XmlNode {
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) throw new DocumentRejected('a part declares a DTD');
  try {
    return parser.parse(text, true) as XmlNode;
  } catch (error) {
    throw new DocumentRejected(`malformed XML: ${(error as Error).message}`);
  }
}

export function child(node: unknown, name: string): XmlNode | undefined {
  if (!node || typeof node !== 'object') return undefined;
  const value = (node as XmlNode)[name];
  if (Array.isArray(value)) return value[0] as XmlNode | undefined;
  return value && typeof value === 'object' ? (value as XmlNode) : undefined;
}

export function children(node: unknown, name: string): XmlNode[] {
  if (!node || typeof node !== 'object') return [];
  const value = (node as XmlNode)[name];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).filter((v): v is XmlNode => !!v && typeof v === 'object');
}

export function attr(node: unknown, name: string): string | undefined {
  if (!node || typeof node !== 'object') return undefined;
  const value = (node as XmlNode)[`@_${name}`];
  return typeof value === 'string' ? value : undefined;
}

/** The text of an element that may carry attributes (then its text is under #text). */
export function textOf(node: unknown): string {
  if (typeof node === 'string') return node;
  if (node && typeof node === 'object') {
    const text = (node as XmlNode)['#text'];
    return typeof text === 'string' ? text : '';
  }
  return '';
}

/** A part's relationships: id → { target, external }. */
export function relationships(
  relsXml: string | undefined,
): Map<string, { target: string; external: boolean }> {
  const rels = new Map<string, { target: string; external: boolean }>();
  if (!relsXml) return rels;
  for (const rel of children(child(parseXml(relsXml), 'Relationships'), 'Relationship')) {
    const id = attr(rel, 'Id');
    const target = attr(rel, 'Target');
    if (id && target) rels.set(id, { target, external: attr(rel, 'TargetMode') === 'External' });
  }
  return rels;
}

/** The rels part of a part: ppt/slides/slide1.xml → ppt/slides/_rels/slide1.xml.rels. */
export function relsPartOf(part: string): string {
  const slash = part.lastIndexOf('/');
  return `${part.slice(0, slash + 1)}_rels/${part.slice(slash + 1)}.rels`;
}
