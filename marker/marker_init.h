/* marker/marker_init.h - the marker library set up once per process (from the environment, or
 * from perfsh's control block), its file closed at exit and at SIGTERM/SIGINT, and forgotten in
 * a forked child. */
#ifndef PS_MARKER_INIT_H
#define PS_MARKER_INIT_H

/* Set up (once; also run before main()): pm_cfg.on says whether markers record. */
void pm_init(void);
/* A library loaded into a running process (the agent, by perfsh's attach): shared mode with
   perfsh's control block at @path from now on. 0, 1 when markers are on already (a control
   block taken before, or a file), or -1 (off, the reason in the block when it could be read). */
int pm_init_attach(const char *path);
/* The first thread's first hit (once): the SIGTERM and SIGINT handlers and the background writer
   (file mode). */
void pm_first_hit(void);

#endif
