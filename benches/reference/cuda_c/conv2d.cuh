// The convolutions of kernels::conv2d: a zero-padded, same-size cross-correlation with a
// (2R+1)² filter, R = 1, 2, 3 chosen at run time and dispatched to a body compiled for it.
#pragma once

#define MAX_RADIUS 3u

#define WITH_RADIUS(radius, call)                 \
    switch (radius) {                             \
        case 1: { const unsigned R = 1; call; break; } \
        case 2: { const unsigned R = 2; call; break; } \
        default: { const unsigned R = 3; call; break; } \
    }
