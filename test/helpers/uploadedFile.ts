import { expect } from '@jest/globals';

/** The file DTO an upload answers with: a new id, and kind `file` until its bytes are parsed. */
export const uploadedFile = (filename: string, mimeType: string, sizeBytes: number) => ({
  id: expect.stringMatching(/^file_/),
  filename,
  mimeType,
  sizeBytes,
  kind: 'file',
  createdAt: expect.any(String),
});
