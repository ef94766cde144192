import { searchBrainPages } from '../../../shared/db/queries/brainPages.ts';
import type { AppDeps } from '../../deps.ts';
import type { Answer, OperationCall } from '../../pipeline/operationCall.ts';

const maxResults = 10;

/** POST /brain/search: ranked pages the key's creator may see. Free: nothing is metered. */
export function searchBrain({ pool }: AppDeps) {
  return async (call: OperationCall): Promise<Answer> => {
    const { query } = call.body as { query: string }; // shape enforced by the contract checks
    const principal = call.principal!;
    const hits = await searchBrainPages(pool, {
      workspaceId: principal.workspaceId,
      memberId: principal.memberId,
      query,
      limit: maxResults,
    });
    const body = {
      results: hits.map((h) => ({
        pageId: h.id,
        slug: h.slug,
        title: h.title,
        score: h.score,
        snippet: h.snippet,
      })),
    };
    return { status: 200, body };
  };
}
