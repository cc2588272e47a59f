//! The vector environment as Python sees it: many games of one kind stepped together, the
//! interpreter released while they step.

use super::*;

/// Many games of one kind stepped together in Rust: `obs, mask, player = reset()`, then
/// `obs, mask, player, rewards, terminated, truncated = step(actions)`. Finished games restart
/// at once (the rows returned with `terminated` or `truncated` already show the next game;
/// `final_observation()` keeps the last view of the finished one).
#[pyclass(module = "meeple._meeple", frozen)]
pub(crate) struct VecEnv {
    inner: Mutex<Box<dyn DynVecEnv>>,
    game: Arc<dyn DynGame>,
    num_envs: usize,
}

type StepArrays<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyArray1<i8>>,
    Bound<'py, PyAny>,
    Bound<'py, PyArray1<bool>>,
    Bound<'py, PyArray1<bool>>,
);

impl VecEnv {
    fn arrays<'py>(&self, py: Python<'py>, out: vecenv::Outputs) -> PyResult<StepArrays<'py>> {
        let n = self.num_envs;
        let mut shape = vec![n];
        shape.extend(self.game.observation_shape());
        let obs = PyArray1::from_vec(py, out.obs).reshape(shape)?.into_any();
        let mask = PyArray1::from_vec(py, out.mask).reshape([n, self.game.num_actions()])?.into_any();
        let rewards = PyArray1::from_vec(py, out.rewards).reshape([n, self.game.num_players()])?.into_any();
        Ok((
            obs,
            mask,
            PyArray1::from_vec(py, out.player),
            rewards,
            PyArray1::from_vec(py, out.terminated),
            PyArray1::from_vec(py, out.truncated),
        ))
    }
}

#[pymethods]
impl VecEnv {
    #[new]
    #[pyo3(signature = (game, num_envs, seed = 0, threads = 1, opponents = None, seat = None, max_turns = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        game: &Bound<'_, PyAny>,
        num_envs: usize,
        seed: u64,
        threads: usize,
        opponents: Option<&Bound<'_, PyAny>>,
        seat: Option<&Bound<'_, PyAny>>,
        max_turns: Option<u32>,
    ) -> PyResult<Self> {
        let game = game_arg(game)?;
        let threads = limits::check_threads("threads", threads).map_err(value_error)?;
        let opponents: Vec<String> = match opponents {
            None => Vec::new(),
            Some(o) if o.is_none() => Vec::new(),
            Some(o) => {
                if let Ok(s) = o.extract::<String>() {
                    vec![s]
                } else if let Ok(list) = o.extract::<Vec<String>>() {
                    list
                } else {
                    return Err(PyTypeError::new_err("opponents: expected an agent spec string or a list of them"));
                }
            }
        };
        let seat = match seat {
            None => {
                if opponents.is_empty() {
                    None
                } else {
                    Some(0)
                }
            }
            Some(s) if s.extract::<String>().is_ok_and(|t| t == "random") => None,
            Some(s) => match s.extract::<i64>() {
                Ok(v) if v >= 0 && (v as u64) < game.num_players() as u64 => Some(v as usize),
                Ok(v) => {
                    return Err(PyValueError::new_err(format!(
                        "seat {v}: {} has seats 0 to {}, or give 'random'",
                        game.spec(),
                        game.num_players() - 1
                    )));
                }
                Err(_) => return Err(PyTypeError::new_err("seat: expected a seat number or 'random'")),
            },
        };
        if seat.is_some() && opponents.is_empty() {
            return Err(PyValueError::new_err("seat is for play against opponents: give opponents='SPEC' too"));
        }
        let config = VecEnvConfig { num_envs, seed, threads, opponents, seat, max_turns };
        let g = game.clone();
        let inner = py.detach(move || g.vec_env(config)).map_err(value_error)?;
        Ok(VecEnv { inner: Mutex::new(inner), game, num_envs })
    }

    #[getter]
    fn num_envs(&self) -> usize {
        self.num_envs
    }

    #[getter]
    fn game(&self) -> Game {
        Game { inner: self.game.clone() }
    }

    /// Starts every game: `obs [n, *shape]` (float32, the mover's view), `mask [n, A]` (bool),
    /// `player [n]` (int8, whose view and move).
    fn reset<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let inner = &self.inner;
        let out = py.detach(|| inner.lock().expect("env lock").reset()).map_err(value_error)?;
        let (obs, mask, player, ..) = self.arrays(py, out)?;
        PyTuple::new(py, [obs, mask, player.into_any()])
    }

    /// Plays one action per game (an integer array `[n]`): `obs, mask, player, rewards [n, P]
    /// (float32, nonzero when a game ends: +1 win, -1 loss, 0 draw), terminated [n], truncated [n]`.
    fn step<'py>(&self, py: Python<'py>, actions: &Bound<'py, PyAny>) -> PyResult<StepArrays<'py>> {
        let np = py.import("numpy")?;
        let arr = np.call_method1("asarray", (actions,))?;
        let kind: String = arr.getattr("dtype")?.getattr("kind")?.extract()?;
        if kind != "i" && kind != "u" {
            return Err(PyTypeError::new_err(format!(
                "actions: expected an integer array of shape ({},), got dtype {}",
                self.num_envs,
                arr.getattr("dtype")?.str()?
            )));
        }
        let shape: Vec<usize> = arr.getattr("shape")?.extract()?;
        if shape != [self.num_envs] {
            return Err(PyValueError::new_err(format!(
                "actions: expected shape ({},), one per environment, got {shape:?}",
                self.num_envs
            )));
        }
        let arr: PyReadonlyArray1<'py, i64> = arr.call_method1("astype", ("int64",))?.extract()?;
        let actions = arr.as_slice()?.to_vec();
        let inner = &self.inner;
        let out = py.detach(move || inner.lock().expect("env lock").step(&actions)).map_err(value_error)?;
        self.arrays(py, out)
    }

    /// The last observation of each game that ended, as seen by the seat that moved last
    /// (`[n, *shape]`; rows of games that did not end in the last step hold older values).
    fn final_observation<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = self.inner.lock().expect("env lock").final_observation().to_vec();
        let mut shape = vec![self.num_envs];
        shape.extend(self.game.observation_shape());
        Ok(PyArray1::from_vec(py, v).reshape(shape)?.into_any())
    }

    /// The seed each game's current episode started from (env i's k-th game: seed + i + k * n).
    fn episode_seeds(&self) -> Vec<u64> {
        self.inner.lock().expect("env lock").episode_seeds()
    }

    fn __repr__(&self) -> String {
        format!("VecEnv('{}', {})", self.game.spec(), self.num_envs)
    }
}
