import { fileTypeFromBuffer } from 'file-type';

/** How many leading bytes a sniff reads: enough for every signature `file-type` knows. */
export const sniffHeadBytes = 4100;

// Containers that hold audio but are typed as video (or generically) by their signature.
const audioContainers = new Set(['video/mp4', 'video/webm', 'video/ogg', 'video/3gpp', 'application/ogg']);

/** The type the leading bytes of a file show, from their signature; undefined when none is known. */
export async function sniffType(head: Buffer): Promise<string | undefined> {
  return (await fileTypeFromBuffer(head))?.mime;
}

/**
 * Do these leading bytes show audio? A declared type is a claim; the signature decides, so an
 * executable or a document sent as audio/wav is refused. Bytes with no known signature are refused
 * too: every format a transcription model takes has one.
 */
export async function isAudioContent(head: Buffer): Promise<boolean> {
  const type = await sniffType(head);
  return type !== undefined && (type.startsWith('audio/') || audioContainers.has(type));
}

/** Do these bytes show an image or a PDF (what OCR reads), by their signature? */
export async function isOcrContent(bytes: Buffer): Promise<boolean> {
  const type = await sniffType(bytes.subarray(0, sniffHeadBytes));
  return type !== undefined && (type.startsWith('image/') || type === 'application/pdf');
}
