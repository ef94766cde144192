import { sniffType } from '../media/contentSniff.ts';

/** Native executables: never stored, whatever they are declared as. */
const executables = new Set([
  'application/x-elf',
  'application/x-msdownload',
  'application/x-mach-binary',
  'application/x-executable',
  'application/x-sharedlib',
  'application/x-dosexec',
  'application/vnd.microsoft.portable-executable',
]);

const zipFamily =
  /^application\/(zip|x-zip-compressed|epub\+zip|java-archive|vnd\.openxmlformats-officedocument\.|vnd\.oasis\.opendocument\.|vnd\.ms-[a-z]+\.[a-z]+\.macroenabled)/;
const archives = new Set([
  'application/gzip',
  'application/x-gzip',
  'application/x-7z-compressed',
  'application/x-rar-compressed',
  'application/vnd.rar',
  'application/x-bzip2',
  'application/x-xz',
  'application/zstd',
  'application/x-tar',
]);
const textual =
  /^(text\/|application\/(json|xml|javascript|ecmascript|x-ndjson|ndjson|yaml|x-yaml|csv|sql|graphql|ld\+json)$|application\/[a-z0-9.+-]+\+(json|xml)$|image\/svg\+xml$)/;
// Containers that hold audio but are typed as video (or generically) by their signature.
const audioContainers = new Set(['video/mp4', 'video/webm', 'video/ogg', 'video/3gpp', 'application/ogg']);

function baseType(mimeType: string): string {
  return mimeType.split(';')[0]!.trim().toLowerCase();
}

/** Declared types whose formats carry a signature: the content must show it. */
function hasSignature(declared: string): boolean {
  return (
    (declared.startsWith('image/') && declared !== 'image/svg+xml') ||
    declared.startsWith('audio/') ||
    declared.startsWith('video/') ||
    declared === 'application/pdf' ||
    zipFamily.test(declared) ||
    archives.has(declared)
  );
}

function signatureFits(declared: string, sniffed: string): boolean {
  if (declared === sniffed) return true;
  const family = declared.split('/')[0]!;
  if (['image', 'audio', 'video'].includes(family) && sniffed.startsWith(`${family}/`)) return true;
  if (family === 'audio' && audioContainers.has(sniffed)) return true;
  if (family === 'video' && sniffed === 'application/ogg') return true;
  // An office document is a zip; a 4 KiB head does not always reach the entry that names its kind.
  if (zipFamily.test(declared) && zipFamily.test(sniffed)) return true;
  return archives.has(declared) && archives.has(sniffed) && declared.endsWith(sniffed.split('/')[1]!);
}

function looksBinary(head: Buffer): boolean {
  const utf16 =
    head.length >= 2 && ((head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff));
  return !utf16 && head.includes(0);
}

/**
 * May a file declared as `mimeType` with these first bytes (up to sniffHeadBytes) be stored? The
 * declared type is a claim and the bytes decide: executables are refused whatever they claim; a type
 * whose format has a signature (images, audio, video, PDF, office documents, archives) needs content
 * showing a matching one; a text type needs content without a binary signature; any other type
 * (application/octet-stream, say) takes any content but an executable.
 */
export async function contentFitsDeclared(mimeType: string, head: Buffer): Promise<boolean> {
  const declared = baseType(mimeType);
  if (executables.has(declared)) return false;
  const sniffed = await sniffType(head);
  if (sniffed !== undefined && executables.has(sniffed)) return false;
  if (hasSignature(declared)) return sniffed !== undefined && signatureFits(declared, sniffed);
  if (textual.test(declared)) {
    return (sniffed === undefined || sniffed === 'application/xml') && !looksBinary(head);
  }
  return true;
}

/** Is the declared type one a drive refuses outright (before any byte is read)? */
export function refusedDeclaredType(mimeType: string): boolean {
  return executables.has(baseType(mimeType));
}

// RFC 9110 media type: type "/" subtype, then parameters; no control characters anywhere.
const mediaType = /^[A-Za-z0-9!#$&^_.+-]{1,127}\/[A-Za-z0-9!#$&^_.+-]{1,127}(\s*;[\x20-\x7e]*)?$/;

/** Is `value` a media type that can be stored and sent back in a Content-Type header? */
export function isMediaType(value: string): boolean {
  return value.length <= 255 && mediaType.test(value);
}
