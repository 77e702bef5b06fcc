/* core/session/session_view.c - a session's records as a view (see session_view.h). */
#include "session_view.h"

void ps_session_view(const struct ps_session *s, struct ps_view *v)
{
	v->base = (const unsigned char *)ps_session_record(s, 0);
	v->get = NULL;
	v->ctx = NULL;
	v->n = ps_session_nrecords(s);
	if (v->n && !ps_session_record(s, v->n - 1))
		v->n = 0; /* spilled to a file: none are in memory */
	v->recsize = ps_session_recsize(s);
	v->nev = ps_session_nevents(s);
	for (int k = 0; k < v->nev; k++) {
		v->names[k] = ps_session_event(s, k)->name;
		v->group[k] = ps_session_event_group(s, k);
	}
}
