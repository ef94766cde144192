import type { Issue } from '../errors/appError.ts';

/**
 * What a streamed multipart upload came to, as the domain checks read it (the api's receiveUpload
 * produces it): the stored file if one was kept, the text fields, and what was wrong on the way.
 */
export type UploadOutcome = {
  stored?: { key: string; filename: string; mimeType: string; sizeBytes: number };
  fields: Record<string, string>;
  issues: Issue[];
  unsupportedType?: string;
  /** The type was refused for the file's content (its first bytes), not for the declared type. */
  contentRefused: boolean;
  tooLarge: boolean;
};
