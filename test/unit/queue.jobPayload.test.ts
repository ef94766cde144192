import { describe, expect, it } from '@jest/globals';

import { jobPayload } from '../../shared/queue/taskMap.ts';

describe('job payloads', () => {
  it('read an inline payload of the previous release (with the ids the run no longer takes)', () => {
    const queued = {
      jobId: 'job_1',
      inline: {
        type: 'embeddings.create',
        workspace_id: 'ws_1',
        project_id: 'prj_1',
        key_id: null,
        input: { input: ['x'] },
        request_id: 'req_1',
      },
    };
    expect(jobPayload.parse(queued)).toEqual({
      jobId: 'job_1',
      inline: { type: 'embeddings.create', input: { input: ['x'] } },
    });
  });
});
