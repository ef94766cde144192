import type { RequestHandler } from 'express';

import type { AppDeps } from '../../deps.ts';
import { postEmbeddings } from './postEmbeddings.ts';
import { postImages } from './postImages.ts';
import { postOcr } from './postOcr.ts';
import { postText } from './postText.ts';
import { postTranscriptions } from './postTranscriptions.ts';

/** The generation operations (openapi.yaml operationId → handler). */
export function generationHandlers(deps: AppDeps): Record<string, RequestHandler> {
  return {
    'text.generate': postText(deps),
    'images.generate': postImages(deps),
    'embeddings.create': postEmbeddings(deps),
    'transcriptions.create': postTranscriptions(deps),
    'ocr.extract': postOcr(deps),
  };
}
