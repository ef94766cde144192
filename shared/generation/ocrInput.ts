import { AppError } from '../errors/appError.ts';
import { ocrMaxBytes, ocrMaxPixels } from '../jobs/generationInputs.ts';
import { isOcrContent } from '../media/contentSniff.ts';
import { oversizedImageMessage, readImageDimensions } from '../media/imageDimensions.ts';
import { base64DecodedBytes, decodeBase64 } from './base64.ts';

const invalidData = (message: string) =>
  new AppError('invalid_request_body', 'The request body does not match the schema.', {
    issues: [{ path: 'data', message }],
  });

/**
 * The bytes of POST /ocr's `data`, checked before anything is stored: at most 20 MiB once decoded
 * (measured without decoding), strict base64, an image or PDF by its signature (the declared type is
 * a claim; the spec gives POST /ocr no media-type error, so other content is an invalid `data`), and
 * an image that declares at most ocrMaxPixels (decoding is where a small file becomes a large bitmap;
 * the worker checks again). Bytes whose header cannot be read go on to the worker, which answers.
 * @throws AppError file_too_large, invalid_request_body
 */
export async function readOcrData(data: string): Promise<Buffer> {
  if (base64DecodedBytes(data) > ocrMaxBytes) {
    throw new AppError(
      'file_too_large',
      `OCR data may be at most ${ocrMaxBytes / 1024 / 1024} MiB once decoded.`,
    );
  }
  const bytes = decodeBase64(data);
  if (!bytes || bytes.length === 0) throw invalidData('must be base64-encoded file bytes');
  if (!(await isOcrContent(bytes))) throw invalidData('must be an image or a PDF');
  const image = readImageDimensions(bytes);
  if (image && image.pixels > ocrMaxPixels) {
    throw new AppError('file_too_large', oversizedImageMessage(image, ocrMaxPixels));
  }
  return bytes;
}
