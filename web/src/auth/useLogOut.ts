import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { sessionClient, unwrap } from '../api/client';

/** Ends the session on the server (GET /auth/logout), then forgets everything the session loaded. */
export function useLogOut() {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(sessionClient.GET('/auth/logout')),
    onSuccess: async () => {
      await navigate('/login', { replace: true });
      queryClient.clear();
    },
  });
}
