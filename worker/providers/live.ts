import type { Config } from '../../shared/config/config.ts';
import type { Providers } from '../../shared/providers/types.ts';
import { localVideo } from './ffmpegVideo.ts';
import { localChat, localEmbeddings, localImages, localTranscription } from './local.ts';
import { makeOpenAiProviders } from './openai.ts';
import { makeTesseractOcr } from './tesseract.ts';

/**
 * The providers live keys use. OCR is always the local tesseract (OCR_ENGINES engines, reads bounded
 * by OCR_TIMEOUT_MS): the OpenAI protocol has no OCR endpoint, and DESIGN.md makes local OCR real.
 * Everything else follows PROVIDER.
 */
export function makeLiveProviders(config: Config): Providers & { close(): Promise<void> } {
  const ocr = makeTesseractOcr({ engines: config.ocrEngines, timeoutMs: config.ocrTimeoutMs });
  switch (config.provider.name) {
    case 'local':
      return {
        chat: localChat,
        images: localImages,
        embeddings: localEmbeddings,
        transcription: localTranscription,
        ocr,
        video: localVideo,
        close: () => ocr.close(),
      };
    case 'openai':
      return { ...makeOpenAiProviders(config), ocr, close: () => ocr.close() };
    default: {
      const never: never = config.provider.name;
      throw new Error(`unknown provider ${String(never)}`);
    }
  }
}
