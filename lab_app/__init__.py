"""The equilibrium lab: matrix-game solvers in the browser and on workers."""
