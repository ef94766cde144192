/** DESIGN.md: presigned parts of at least 5 MiB, at most 10,000 of them, sessions of 3600 s. */
const MiB = 1024 * 1024;
export const minPartSize = 5 * MiB;
export const maxParts = 10_000;
export const sessionSeconds = 3600;
/** S3's largest object. */
export const maxPresignedBytes = 5 * 1024 * 1024 * MiB;
// A part size S3 recommends for throughput; larger only when 10,000 of them would not hold the file.
const preferredPartSize = 8 * MiB;

/** How a file of `sizeBytes` is cut into parts: whole MiB, every part but the last exactly partSize. */
export function partLayout(sizeBytes: number): { partSize: number; partCount: number } {
  const partSize = Math.max(preferredPartSize, minPartSize, Math.ceil(sizeBytes / maxParts / MiB) * MiB);
  return { partSize, partCount: Math.max(1, Math.ceil(sizeBytes / partSize)) };
}

/** The size part `partNumber` must have: partSize, the remainder for the last. */
export function expectedPartSize(
  layout: { sizeBytes: number; partSize: number; partCount: number },
  partNumber: number,
) {
  return partNumber < layout.partCount
    ? layout.partSize
    : layout.sizeBytes - layout.partSize * (layout.partCount - 1);
}
